// Package testfailover tests test failovers and drills end to end: the DR
// copies snapshotted, restored into an isolated namespace and booted there
// with their boot plan, companions and hook-sidecar rule, the checks and the
// probe, application-consistent points (frozen guests, protocol A drained
// before the cut), a DR cluster without a VolumeSnapshotClass, scheduled
// drills, minted kubeconfigs under the charts' roles, and the test failover
// fault matrix (make testfailover-fault-matrix runs every cell).
//
// Each test starts real kube-apiserver and etcd processes for the quorum and
// both workload clusters (test/harness, test/env), the CSI snapshot-controller,
// the DRBD, KubeVirt, snapshot and virt-api simulators (test/sim), and
// quorum-manager's test failover controller (internal/quorum/testfailover).
//
// The package holds only tests: it exports nothing, and product code never
// imports it.
package testfailover
