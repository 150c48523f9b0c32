// Package remote is quorum-manager's one way to reach the workload clusters of a
// ProtectionZone. Controllers depend on the ClusterCache interface: a cached
// reader and a direct client per cluster, the cluster's reachability with a
// reason, and one event source per controller that maps remote objects of the
// kinds it watches, and reachability changes, to its requests.
//
// Manager implements it with a client and a cache per cluster, built from the
// cluster's kubeconfig Secret, with explicit rate limits and timeouts, and a
// health probe that marks a cluster unreachable only after FailureThreshold
// failed probes in a row. remote/fake implements it in memory for unit tests.
// Only quorum-manager imports it; workload-tier binaries never reach another
// cluster.
package remote
