// Package setup wires drbd-node-agent: the per-node DRBD reconciler, its events2
// watcher and the lost-quorum taint controller, on a manager without leader
// election. Like the workload tier, it never reaches another cluster.
package setup

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/siterecovery/siterecovery/internal/boot"
	"github.com/siterecovery/siterecovery/internal/nodeagent"
)

// Options are the flags every siterecovery binary accepts.
type Options = boot.Options

// Config is the agent's own configuration.
type Config = nodeagent.Config

// Run runs the agent until SIGTERM or SIGINT and returns its exit code. One agent
// runs per node, each acting on its own node only, so leader election is off.
func Run(o Options, cfg Config) int {
	o.LeaderElect = false
	o.CacheByObject = nodeagent.CacheByObject(cfg.NodeName)
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.Registry // served on /metrics
	}
	return boot.Run(o, func(mgr ctrl.Manager, _ boot.Options) error { return nodeagent.Setup(mgr, cfg) })
}
