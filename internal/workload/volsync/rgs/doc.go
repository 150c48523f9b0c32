// Package rgs reconciles ReplicationGroupSources: the primary half of a VolSync
// consistency group. Every cycle takes one VolumeGroupSnapshot of the group's
// PVCs, so that all of them are synced from one point in time, restores each
// member snapshot into a read-only PVC and syncs it with one VolSync
// ReplicationSource per PVC, triggered manually with the cycle's name. The group
// schedules the cycles (trigger.schedule or trigger.manual) instead of VolSync.
// A cycle is complete when every source reports the trigger as synced; then the
// restored PVCs and the snapshot go, the sources stay for the next cycle.
//
// With the enable-diff annotation set to exactly "true" the cycle keeps its
// snapshot, labelled previous, as the base of the next one, and the sources use
// the External spec of the ceph-volsync-plugin, which sends only the blocks
// that differ between the base and the target member snapshot. Every step is
// found again from the cluster after a restart: the snapshot of the cycle in
// progress carries the current label.
//
// When the source's group (the local ProtectionGroup its VRG names) asks for
// Application consistency, the cycle's snapshot is cut while the group's
// running guests are frozen through KubeVirt's freeze subresource
// (internal/freeze), and the point it reached goes to that group's
// status.consistency.lastPoint.
package rgs
