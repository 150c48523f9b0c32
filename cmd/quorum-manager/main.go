// Command quorum-manager is the management plane on the quorum cluster: the
// failover, protection, pg-sync, test-failover, replication-monitor, DRPolicy and
// DRPlacementControl reconcilers for one DR namespace.
package main

import (
	"flag"
	"os"

	"github.com/siterecovery/siterecovery/pkg/setup"
)

func main() {
	var o setup.Options
	o.BindFlags(flag.CommandLine, "quorum-manager.siterecovery.trilio.io")
	flag.StringVar(&o.Namespace, "namespace", "", "the DR namespace (dr-<name>) this instance manages; required")
	flag.Parse()
	os.Exit(setup.Run(o, setup.QuorumManager))
}
