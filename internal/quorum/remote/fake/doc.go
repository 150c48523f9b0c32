// Package fake backs remote.ClusterCache with in-memory workload clusters for
// unit tests: one controller-runtime fake client per cluster, reachability a
// test sets, and the controllers' event sources fed by every write through a
// cluster's client. It is for tests only; quorum-manager runs remote.Manager.
package fake
