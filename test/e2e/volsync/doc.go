// Package volsync tests the VolSync consistency-group flows of the workload
// tier end to end: full and diff cycles, interrupted syncs, bad input, crashes
// of pg-controller in every step, published and clusterset addresses, the VRG
// path with its final sync, the rollback of a failover, and application-
// consistent cycles that freeze the guests.
//
// Each test starts real kube-apiserver and etcd processes (one or two clusters,
// test/harness), the CSI snapshot-controller, the snapshot, storage and VolSync
// mover simulators (test/sim) sharing one store of volume data, and the
// controllers under test (internal/workload/volsync/rgs and rgd, and
// internal/workload/vrg) in process. The benchmarks measure one cycle's
// control-plane time and writes against a floor client (make bench-volsync).
//
// The package holds only tests: it exports nothing, and product code never
// imports it.
package volsync
