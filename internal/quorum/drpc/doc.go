// Package drpc is the DRPlacementControl controller of quorum-manager: the
// placement state machine of one application (a ProtectionGroup) of the
// Offloaded and VolSync backends, with the global action consensus.
//
// For every DRPlacementControl it writes a VolumeReplicationGroup on each
// cluster of its DRPolicy through internal/quorum/remote (name: the DRPC's name; namespace:
// the namespace of the group's VMs on the workload clusters, which therefore
// must share one), primary where the application runs and secondary elsewhere,
// and moves the application by server-side applying the workload
// ProtectionGroup's spec.desiredState under the field owner "siterecovery-drpc".
// It copies the ramendr.openshift.io/global-vgr label from the primary VRG onto
// the DRPC and from the DRPC onto every VRG it writes; before a Failover or
// Relocate of a labelled DRPC proceeds, every DRPC with the same label must ask
// for the same action and target cluster (progression WaitOnGlobalAction and
// condition GlobalAction otherwise), and a change of one of them wakes all its
// peers at once. Deleting a DRPC deletes its VRGs on both clusters.
package drpc
