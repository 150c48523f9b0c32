// Command quorum-manager is the management plane on the quorum cluster: the
// failover, protection, pg-sync, test-failover, replication-monitor, DRPolicy and
// DRPlacementControl reconcilers for one DR namespace.
package main

import (
	"flag"
	"os"
	"time"

	"github.com/siterecovery/siterecovery/internal/quorum/setup"
)

func main() {
	var o setup.Options
	var q setup.QuorumOptions
	o.BindFlags(flag.CommandLine, "quorum-manager.siterecovery.trilio.io")
	flag.StringVar(&o.Namespace, "namespace", "", "the DR namespace (dr-<name>) this instance manages; required")
	flag.DurationVar(&q.ProbeInterval, "cluster-probe-interval", 10*time.Second, "how often each workload cluster's API server is probed")
	flag.IntVar(&q.FailureThreshold, "cluster-failure-threshold", setup.DefaultFailureThreshold, "how many probes of a workload cluster must fail in a row before it is unreachable")
	flag.StringVar(&q.HolderImage, "replica-holder-image", setup.DefaultHolderImage, "image of the pods that keep a replica's backing PVCs attached on its node")
	flag.StringVar(&q.ProbeImage, "probe-image", setup.DefaultProbeImage, "image of the test failover's network probe Jobs (sh, nc and wget)")
	flag.Parse()
	os.Exit(setup.Run(o, q))
}
