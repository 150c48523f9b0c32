// Package remote is quorum-manager's one way to reach the workload clusters of a
// ProtectionZone: a client and a cache per cluster, built from the cluster's
// kubeconfig Secret, with explicit rate limits and timeouts, a health probe, and
// watches on remote objects that enqueue the quorum objects depending on them.
// Only quorum-manager imports it; workload-tier binaries never reach another
// cluster.
package remote
