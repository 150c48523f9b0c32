// Package pgsync tests pg-sync end to end: the standby VM specs it keeps on
// the DR cluster (with the zone's and the group's network mapping, MAC policy
// and the round trip of a failover and failback), the boot plan and
// consistency settings it carries to the workload copies of a group, the
// companion objects it copies (ConfigMaps, Secrets on request, Services,
// KubeVirt instancetypes and preferences, with per-cluster overrides and
// conflicts), and the cleanup when a VM or a group goes.
//
// Each test starts real kube-apiserver and etcd processes for the quorum and
// both workload clusters (test/harness, test/env) and quorum-manager's
// pg-sync controller (internal/quorum/pgsync) in process.
//
// The package holds only tests: it exports nothing, and product code never
// imports it.
package pgsync
