// Package snapshot is a test fixture that plays a CSI driver's part in volume
// snapshots, for clusters started by test/harness, which have the snapshot
// CRDs but no CSI driver: what the csi-snapshotter sidecar with its driver and
// the external-provisioner do. The common part, binding VolumeSnapshots and
// VolumeGroupSnapshots to their contents, carrying readiness back, finalizers
// and deletions, is the real snapshot-controller's, which every cluster using
// this package runs (harness Cluster.StartSnapshotController). It is never
// product code.
//
// For the VolumeSnapshotContents of Options.Driver:
//   - dynamic (spec.source.volumeHandle, made by the snapshot-controller): after
//     Options.ReadyDelay the snapshot is cut, handle "snap-<snapshot uid>", and
//     the status gets snapshotHandle, creationTime, readyToUse and restoreSize
//     (the size of the PV with that volume handle). A missing class or volume
//     sets status.error instead, and the driver is asked again.
//   - pre-provisioned (spec.source.snapshotHandle) and group members: ready,
//     with the size and time of the snapshot the handle names, once it exists
//     (another content or a group content reports it, or Data holds it).
//   - being deleted, once the snapshot-controller marked it so: with policy
//     Delete the snapshot goes from the storage (unless a group owns it), then
//     the snapshot-controller's finalizer.
//
// For the VolumeGroupSnapshotContents of Options.Driver, the same: a dynamic
// one gets a snapshot of every volume taken at one point in time, listed in
// status.volumeSnapshotInfoList, from which the snapshot-controller makes the
// member VolumeSnapshots and contents; deleting it deletes its members'
// snapshots.
//
// PVCs whose dataSource is a ready VolumeSnapshot of Options.Driver are
// provisioned and bound: a PV "pvc-<claim uid>" (CSI source of the driver,
// the PV name as volume handle, reclaim policy Delete, claimRef set) is created
// and the claim gets spec.volumeName, the PV controller's bind annotations and
// status Bound. When such a claim is deleted the simulator also plays the
// pvc-protection controller (it removes the kubernetes.io/pvc-protection
// finalizer) and deletes the PV.
//
// Guest agent: with Options.GuestAgent set, every running VirtualMachineInstance
// that matches Options.GuestAgentSelector (nil means all) gets the condition
// AgentConnected=True after Options.GuestAgentDelay. The KubeVirt simulator
// (test/sim/kubevirt) never sets it, and lives in another package; this is where a
// test that needs a connected guest agent gets one.
package snapshot
