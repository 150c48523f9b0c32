// Package failover tests failover and failback end to end on the DRBD
// backend: planned and unplanned failovers (on the full control plane, and
// under the charts' roles with SITERECOVERY_CHART_RBAC), fencing, the
// rejoin of a site that diverged, partial failures, boot plans, groups
// placed by a DRPlacementControl, the finalizer, the loss figures an
// unplanned failover reports, the failover fault matrix (make fault-matrix
// runs every cell, make soak runs it for hours) and the benchmarks
// against a floor client (make bench).
//
// Each test starts real kube-apiserver and etcd processes for the quorum and
// both workload clusters (test/harness, test/env), the DRBD and KubeVirt
// simulators (test/sim), pg-controller and the drbd-node-agents, and
// quorum-manager's failover controller (internal/quorum/failover).
//
// The package holds only tests: it exports nothing, and product code never
// imports it.
package failover
