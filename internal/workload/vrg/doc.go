// Package vrg is the workload-cluster VolumeReplicationGroup controller of
// pg-controller for global VolumeGroupReplication. It talks to
// its own cluster only.
//
// A VRG selects its application's PVCs (spec.pvcSelector, VRG namespace) and maps each
// to a peer class of spec.async.peerClasses by StorageClass name and the class's
// storage ID. When every PVC maps to one global peer class of one GroupReplicationID
// the VRG labels itself ramendr.openshift.io/global-vgr=global-<grID> and its PVCs
// ramendr.openshift.io/consistency-group=<grID>. All VRGs with the same label share one
// VolumeGroupReplication global-<grID> in the operator namespace, which selects PVCs by
// the consistency-group label alone and has no owner.
//
// The shared VGR only changes state once every VRG with the label agrees on
// spec.replicationState (GlobalState condition), and only turns secondary once every
// one of them reports its PVCs unused (GlobalSecondary condition). It is created by the
// first VRG that has PVCs to protect as primary, updated but never deleted on role
// changes, and deleted by the last VRG of the group to be deleted.
package vrg
