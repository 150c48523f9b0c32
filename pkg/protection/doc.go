// Package protection is the protection-controller of quorum-manager. It drives a
// ProtectionRequest through Validating, ProvisioningTarget, CreatingReplication,
// WaitingForInitialSync, SwitchingFrontend and AddingToGroup to Protected (or
// Failed), building the DRBD storage stack of DESIGN §2a for every disk of one VM:
// a backing PVC on the DR cluster, a replica holder pod per side, a DRBDResource
// pair, and a frontend PV/PVC per disk that the VM is switched to.
//
// Every step is idempotent and resumable after a crash: progress lives in the
// request's status (phase, port, minors, volumes), everything created has a
// deterministic name and the label LabelRequest, creates tolerate AlreadyExists,
// and each phase first checks what already exists. The replication port and the
// minors are written to the status before any object that uses them is created,
// so a crash cannot allocate twice.
//
// Names (namespace = the VM's namespace on both workload clusters):
//
//	DRBDResource          vm-<vm>                     (DRBDResourceName)
//	replica holder pod    vm-<vm>-replica             (HolderName)
//	DR backing PVC        <source PVC>                (same name as on the primary)
//	frontend PVC          <source PVC>-drbd           (FrontendPVCName)
//	frontend PV           srdrbd-<namespace>-<source PVC> (FrontendPVName)
//
// Allocation: the port is the lowest free one in 7000-7999 not used by any
// ProtectionRequest of the DR namespace nor by any DRBDResource on the zone's
// workload clusters. Minors start at MinorBase and are unique across the same
// set (zone-wide, hence also per node); a volume uses the same minor on both
// sides, so /dev/drbd<minor> names the same disk everywhere. DRBD node ids are 0
// on the primary and 1 on the DR side. Allocation reads requests through the API
// reader (not the cache) and the controller runs one reconcile at a time, so two
// requests cannot take the same port.
//
// Replica nodes: on the primary, the node the VM's VirtualMachineInstance runs
// on (so the VM keeps running where its DRBD replica is Primary), else the first
// Ready node by name; on the DR side the first Ready node by name. Once a holder
// pod or DRBDResource exists, its spec.nodeName is the record and is reused.
//
// Only remote.Manager reaches the workload clusters. Remote DRBDResource,
// VirtualMachine and PVC events and zone health changes enqueue the request;
// nothing polls except a bounded retry while a cluster is unreachable and the
// single timer of the initial sync timeout.
package protection
