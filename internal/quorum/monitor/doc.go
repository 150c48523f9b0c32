// Package monitor is the replication-monitor of quorum-manager. It keeps one
// ReplicationGroupStatus per quorum ProtectionGroup, aggregated from the
// DRBDResources that the drbd-node-agents report on both workload clusters (read
// from the remote caches of internal/quorum/remote, never listed per poll), raises one
// RPOEvent per episode of replication lag above the group's RPO objective, and
// exports the replication metrics on controller-runtime's registry.
//
// The aggregation (Aggregate) is a pure function of the group's DRBDResources on
// both clusters, the previous status, the open RPOEvent and the time, so it is
// unit-tested and benchmarked on its own. The reconciler around it is woken by
// DRBDResource changes (mapped by the protection-group label), by cluster health
// changes and at least every spec.pollingIntervalSeconds, and writes only what
// changed.
package monitor
