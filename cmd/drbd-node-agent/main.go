// Command drbd-node-agent runs as a DaemonSet on every workload-cluster node that
// holds DRBD replicas. It renders, brings up and promotes/demotes the DRBD resources
// of the DRBDResources assigned to its node, reports DRBD's state (from drbdsetup
// events2) into their status, and taints the node while a resource lacks quorum.
// It talks to its own cluster's API server only and needs no leader election.
// It refuses to start (exit 2) when --node-name is not the host name drbdadm
// matches `on` sections by (uname -n, or $__DRBD_NODE__): the agent renders
// the local replica as `on <node name>`, and drbdadm would refuse every command.
// It also refuses to start without --replication-networks, the CIDRs a peer's
// address must lie in: it never connects a replica to an address outside them.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/siterecovery/siterecovery/internal/nodeagent/setup"
)

func main() {
	var o setup.Options
	var cfg setup.Config
	o.BindFlags(flag.CommandLine, "drbd-node-agent.siterecovery.trilio.io")
	cfg.BindFlags(flag.CommandLine)
	flag.Parse()
	if err := cfg.Complete(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(setup.Run(o, cfg))
}
