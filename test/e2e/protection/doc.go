// Package protection tests protecting a VM end to end, on the DRBD backend:
// the protection flow from request to Protected (on the full control plane,
// and under the charts' roles with SITERECOVERY_CHART_RBAC), DR replica
// placement through the scheduler, allocation across DR namespaces, claim
// conflicts, peer authentication and replication TLS, unprotect and its
// crashes, split brain, templates, the namespace lists of the workload
// clusters, and the data on the DRBD path checked by checksum through
// failovers, unplanned failovers and the fault matrices (make
// data-fault-matrix and protection-fault-matrix run every cell).
//
// Each test starts real kube-apiserver and etcd processes for the quorum and
// both workload clusters (test/harness, test/env), the DRBD and KubeVirt
// simulators (test/sim), pg-controller and the drbd-node-agents, and
// quorum-manager's protection controller (internal/quorum/protection).
//
// The package holds only tests: it exports nothing, and product code never
// imports it.
package protection
