// Package drpolicy tests quorum-manager's DRPolicy controller end to end: the
// peer storage and snapshot classes it discovers on the workload clusters of
// a real zone.
//
// Each test starts real kube-apiserver and etcd processes (test/harness) and
// the DRPolicy controller (internal/quorum/drpolicy) in process.
//
// The package holds only tests: it exports nothing, and product code never
// imports it.
package drpolicy
