// Command quorum-manager is the management plane on the quorum cluster: the
// failover, protection, pg-sync, test-failover, replication-monitor, DRPolicy and
// DRPlacementControl reconcilers for one DR namespace. With --zone-webhook it is
// instead the protectionzone chart's cluster-wide ProtectionZone webhook.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/siterecovery/siterecovery/internal/quorum/setup"
)

func main() {
	var o setup.Options
	var q setup.QuorumOptions
	o.BindFlags(flag.CommandLine, "quorum-manager.siterecovery.trilio.io")
	flag.StringVar(&o.Namespace, "namespace", "", "the DR namespace (dr-<name>) this instance manages; required (with --zone-webhook: its own namespace, defaulting to $POD_NAMESPACE)")
	flag.DurationVar(&q.ProbeInterval, "cluster-probe-interval", 10*time.Second, "how often each workload cluster's API server is probed")
	flag.IntVar(&q.FailureThreshold, "cluster-failure-threshold", setup.DefaultFailureThreshold, "how many probes of a workload cluster must fail in a row before it is unreachable")
	flag.StringVar(&q.HolderImage, "replica-holder-image", setup.DefaultHolderImage, "image of the pods that keep a replica's backing PVCs attached on its node")
	flag.StringVar(&q.ProbeImage, "probe-image", setup.DefaultProbeImage, "image of the test failover's network probe Jobs (its entrypoint is siterecovery-probe)")
	flag.DurationVar(&q.RPOComplianceWindow, "rpo-compliance-window", setup.DefaultRPOComplianceWindow, "the span, ending now, of siterecovery_group_rpo_compliance_ratio: the share of it each group's replication lag was within its RPO objective")
	// Never nil: without the flag no namespace may be protected.
	q.ProtectableNamespaces = []string{}
	flag.Func("protection-allowed-namespaces", "comma-separated application namespaces whose VMs this DR namespace may protect and test (default: none)", func(v string) error {
		for _, ns := range strings.Split(v, ",") {
			if ns = strings.TrimSpace(ns); ns != "" {
				q.ProtectableNamespaces = append(q.ProtectableNamespaces, ns)
			}
		}
		return nil
	})
	zoneWebhook := flag.Bool("zone-webhook", false, "serve only the cluster-wide ProtectionZone admission webhook (the protectionzone chart's mode), no controllers")
	flag.Parse()
	if *zoneWebhook {
		if o.Namespace == "" {
			o.Namespace = os.Getenv("POD_NAMESPACE")
		}
		if o.Namespace == "" {
			fmt.Fprintln(os.Stderr, "--zone-webhook needs --namespace or $POD_NAMESPACE: its certificate Secret lives there")
			os.Exit(2)
		}
		os.Exit(setup.RunZoneWebhook(o))
	}
	os.Exit(setup.Run(o, q))
}
