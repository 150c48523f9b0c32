// Package storagearray is a test fixture that plays the external storage controller of
// an offloaded storage array for VolumeGroupReplications (csi-addons
// replication.storage/v1alpha1 with spec.external true) in envtest clusters started by
// test/harness. It is never product code.
//
// For every VolumeGroupReplication it handles (optionally only those of some
// VolumeGroupReplicationClasses, or matching a label selector), the simulator waits
// Options.Delay after it first sees a desired spec.replicationState and then sets
// status.state to match (primary → Primary, secondary → Secondary, resync → Secondary)
// and status.observedGeneration. With Options.Conditions it also reports Completed and
// Validated True and Degraded and Resyncing False, as the csi-addons controller does;
// without, it reports none, as LUN-level arrays with schedulingInterval 0m do.
//
// With Options.Sync the array replicates in cycles: every Sync.Interval it ends one
// and reports its end as the primary's status.lastSyncTime, from which the VRG takes
// the group's lastGroupSyncTime. Sync.Pause stands for a replication link that is
// down (no cycle ends, the lag grows), Sync.Resume for its return.
//
// Delays are measured with an injected clock and waited for with RequeueAfter, never
// by sleeping. The start of a transition is kept in memory per object and desired
// state, so a restarted simulator starts its delays again.
package storagearray
