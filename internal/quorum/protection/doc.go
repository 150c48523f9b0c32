// Package protection is the protection-controller of quorum-manager. It drives a
// ProtectionRequest through Validating, ProvisioningTarget, CreatingReplication,
// WaitingForInitialSync, SwitchingFrontend and AddingToGroup to Protected (or
// Failed), building the DRBD storage stack for every disk of one VM:
// a backing PVC on the DR cluster, a replica holder pod per side, a DRBDResource
// pair, and a frontend PV/PVC per disk that the VM is switched to.
//
// Every step is idempotent and resumable after a crash: progress lives in the
// request's status (phase, port, minors, volumes), everything created has a
// deterministic name and the label srv1alpha1.ProtectionRequestLabel, creates tolerate AlreadyExists,
// and each phase first checks what already exists. The replication port and the
// minors are written to the status before any object that uses them is created,
// so a crash cannot allocate twice.
//
// Names (namespace = the VM's namespace on both workload clusters):
//
//	DRBDResource          vm-<vm>                     (srv1alpha1.DRBDResourceName)
//	replica holder pod    vm-<vm>-replica             (HolderName)
//	DR backing PVC        <source PVC>                (same name as on the primary)
//	frontend PVC          <source PVC>-drbd           (FrontendPVCName)
//	frontend PV           srdrbd-<namespace>-<source PVC> (FrontendPVName)
//
// Allocation: the port is the lowest free one in 7000-7999 and minors start at
// MinorBase; a volume uses the same minor on both sides, so /dev/drbd<minor>
// names the same disk everywhere. Free means: not claimed in the
// DRBDAllocation of the primary or of the target cluster, by a request of any
// DR namespace (several quorum-managers, each with its own identity, may
// replicate to one workload cluster), nor used by a DRBDResource there or by
// another request of the DR namespace. The request claims its values on both
// clusters with updates that carry the resourceVersion, so of two managers
// that pick the same port at the same instant one gets a conflict and picks
// again. Claims are keyed by the request's uid: after a crash between claim
// and status write the request finds and reuses its own claim. The claim goes
// last when protection is removed, after the DRBDResources; claims of the DR
// namespace whose request is gone (deleted without its finalizer running) are
// dropped by the namespace's next claim or release. DRBD node ids are 0 on
// the primary and 1 on the DR side. The controller runs one reconcile at a
// time.
//
// Replica nodes: on the primary, the node the VM's VirtualMachineInstance runs
// on (so the VM keeps running where its DRBD replica is Primary), else the first
// Ready node by name; on the DR side the first Ready node by name. Once a holder
// pod or DRBDResource exists, its spec.nodeName is the record and is reused.
//
// Removing protection: every request carries Finalizer from its first reconcile,
// before anything exists on a workload cluster. Deleting the request runs the
// removal, again as idempotent steps that read the world, so a removal stopped
// anywhere resumes: a request that never got past Validating just drops the
// finalizer; otherwise
//
//  1. locate: decide which cluster the VM stays on and record it in condition
//     Unprotecting (reason VMStaysOnPrimary or VMStaysOnDR). While the VM is in
//     its quorum group the group's activeCluster decides; afterwards the record
//     does. Nothing happens while a FailoverRequest of the group is unfinished.
//  2. leaveGroup: remove the VM from the quorum group's spec.virtualMachines (the
//     group stays, even empty) and wait until pg-sync removed it from the
//     workload copies, whose ProtectionGroup controllers would otherwise keep
//     starting and stopping it; pg-sync then also deletes its DR standby.
//  3. restoreVMs: stop the VM (its run strategy kept as the protect flow keeps
//     it), delete what lies between it and its backing PVCs on both clusters —
//     frontend PVCs, frontend PVs, the DRBDResources (each drbd-node-agent runs
//     `drbdadm down` under its own finalizer, so DRBD is down before anything
//     below goes) and the holder pods —, then in one patch swap the disks back
//     to the volumes in OriginalVolumesAnnotation, put back the
//     dataVolumeTemplates the switch dropped (KubeVirt refuses a template no
//     volume references, so the switch keeps them in
//     OriginalDataVolumeTemplatesAnnotation) and restore the strategy;
//     wait until it runs if it ran. The VM also loses the group label. A VM that
//     was Halted stays Halted; one its group had stopped gets back the strategy
//     it had before, as a start of the group would.
//  4. removeStack: delete the DR backing PVCs, then the peer-auth Secrets of
//     both clusters; then the finalizer goes.
//
// Objects are found by srv1alpha1.ProtectionRequestLabel and srv1alpha1.DRNamespaceLabel, so only what this
// request created is deleted; the VM's namespace on the DR cluster stays. Each
// layer is deleted once the layers above it are gone on both clusters.
//
// Failed over: a VM that runs on the DR cluster (its group active there, or its
// DR VM running) keeps the removal on hold with Ready=False reason FailedOver,
// saying to fail back to the primary first: tearing down replication then would
// leave the only current copy of the data on the DR cluster with no replica and
// the primary's disks stale, which no operator wants from deleting a request,
// and failing back restores the normal case, where the VM ends where it was
// protected. With srv1alpha1.ForceUnprotectAnnotation set to "true" the VM stays
// where it runs instead: the DR VM is stopped, replication removed, and it is
// started again on the DR backing PVCs (same names as the source PVCs, same
// data), which are kept and lose the request's labels; the primary's VM, which
// the failover stopped, gets its original volumes back and stays Halted. An
// operator uses this when the primary is being given up.
//
// A cluster that does not answer holds the removal with reason
// ClusterUnreachable; its return wakes the request. A deleted zone cannot be
// reached ever again: the finalizer then goes with a Warning event saying what
// was left.
//
// Only remote.ClusterCache reaches the workload clusters. Remote DRBDResource,
// VirtualMachine, PVC and group copy events and zone health changes enqueue the
// request, a deleted one also on changes of its quorum group and FailoverRequests;
// nothing polls except a bounded retry while a cluster is unreachable, while a
// removal waits for pods and PVs to go (teardownPoll), and the single timer of
// the initial sync timeout.
package protection
