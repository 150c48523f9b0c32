// Package drpc tests the DRPlacementControl flows end to end: deploy,
// Relocate and Failover on the Offloaded (storage array) and VolSync
// backends, the global VGR consensus across peer DRPCs and its latency, the
// disaster confirmation of a DRPC Failover, lag on an Offloaded array, the
// DRPC fault matrix (make drpc-fault-matrix runs every cell), and the status
// writes against a floor client.
//
// Each test starts real kube-apiserver and etcd processes for the quorum and
// both workload clusters (test/harness), the storage-array or VolSync
// simulators (test/sim), and quorum-manager's DRPC controller
// (internal/quorum/drpc) with pg-controller's VRG controller in process.
//
// The package holds only tests: it exports nothing, and product code never
// imports it.
package drpc
