// Package monitor tests quorum-manager's replication monitor end to end: a
// zone's DRBD replicas reported healthy, lagging, disconnected and back, the
// ReplicationGroupStatus and RPOEvents it writes, and how often it reconciles.
//
// Each test starts real kube-apiserver and etcd processes for the quorum and
// both workload clusters (test/harness), the zone's objects, and the monitor
// controller (internal/quorum/monitor) in process.
//
// The package holds only tests: it exports nothing, and product code never
// imports it.
package monitor
