// Package snapshot is a test fixture that plays the CSI snapshot machinery (the
// snapshot-controller, a CSI driver's snapshotter and provisioner) and the PV
// binder for clusters started by test/harness, which have the snapshot CRDs but no
// CSI at all. It is never product code.
//
// VolumeSnapshots:
//   - dynamic (spec.source.persistentVolumeClaimName): after Options.ReadyDelay
//     (counted from the snapshot's creationTimestamp) a VolumeSnapshotContent
//     "snapcontent-<snapshot uid>" (deletionPolicy Delete, driver Options.Driver)
//     is created with status snapshotHandle "snap-<snapshot uid>", readyToUse and
//     restoreSize taken from the source PVC (status.capacity, else
//     spec.resources.requests), and the snapshot is marked bound and readyToUse.
//     A missing source PVC sets status.error instead.
//   - pre-provisioned (spec.source.volumeSnapshotContentName): once the content
//     exists its status is filled from spec.source.snapshotHandle (restoreSize is
//     copied from the dynamic content that has the same handle) and the snapshot
//     is marked bound and readyToUse.
//   - deleting a snapshot deletes the contents bound to it whose deletionPolicy is
//     Delete, as the snapshot-controller does.
//
// PVCs whose dataSource is a VolumeSnapshot are bound once the snapshot is ready:
// a PV "pvc-<claim uid>" (CSI source, reclaim policy Delete, claimRef set) is
// created and the claim gets spec.volumeName and status Bound. When such a claim is
// deleted the simulator also plays the pvc-protection controller (it removes the
// kubernetes.io/pvc-protection finalizer) and deletes the PV.
//
// Guest agent: with Options.GuestAgent set, every running VirtualMachineInstance
// that matches Options.GuestAgentSelector (nil means all) gets the condition
// AgentConnected=True after Options.GuestAgentDelay. The KubeVirt simulator
// (test/sim/kubevirt) never sets it, and lives in another package; this is where a
// test that needs a connected guest agent gets one.
package snapshot
