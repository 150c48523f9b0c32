package protection

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/vmdisks"
)

// Condition types of a ProtectionRequest (besides srv1alpha1.ConditionReady
// and srv1alpha1.ConditionValidated, True once the VM, its disks and the zone
// passed validation).
const (
	// ConditionReplicaProvisioned is True once both DRBDResources exist with peers.
	ConditionReplicaProvisioned = "ReplicaProvisioned"
	// ConditionInitialSyncComplete is True once the DR replica is UpToDate.
	ConditionInitialSyncComplete = "InitialSyncComplete"
	// ConditionFrontendSwitched is True once the VM runs on the frontend PVCs.
	ConditionFrontendSwitched = "FrontendSwitched"
	// ConditionUnprotecting is True once removing protection decided which
	// cluster the VM stays on (the reason says which); it is the record that a
	// resumed removal follows, so that the decision is taken once.
	ConditionUnprotecting = "Unprotecting"
)

// Reasons of a ProtectionRequest's conditions. Those marked terminal end the flow
// in phase Failed and need the user to fix something and create a new request;
// the others are waits that resolve by themselves. The request also uses
// srv1alpha1.ReasonZoneNotFound (terminal: spec.zoneRef names no
// ProtectionZone), srv1alpha1.ReasonClusterUnreachable (wait: a workload
// cluster cannot be reached) and srv1alpha1.ReasonSyncing (wait: the initial
// sync is running).
const (
	// ReasonProgressing (Ready=False): the flow is under way.
	ReasonProgressing = srv1alpha1.ReasonProgressing
	// ReasonProtected (Ready=True): the VM is protected.
	ReasonProtected = "Protected"
	// ReasonUnsupportedBackend (terminal): the zone does not use the DRBD backend.
	ReasonUnsupportedBackend = "UnsupportedBackend"
	// ReasonInvalidSpec (terminal): target cluster or group reference is wrong.
	ReasonInvalidSpec = srv1alpha1.ReasonInvalidSpec
	// ReasonVMNotFound (terminal): the VM does not exist on the primary cluster.
	ReasonVMNotFound = srv1alpha1.ReasonVMNotFound
	// ReasonAlreadyProtected (terminal): the VM is in a group or another request has it.
	ReasonAlreadyProtected = "AlreadyProtected"
	// ReasonUnsupportedVolume (terminal): a disk is not a PVC or DataVolume.
	ReasonUnsupportedVolume = vmdisks.ReasonUnsupportedVolume
	// ReasonPVCNotFound (terminal): a disk's PVC does not exist.
	ReasonPVCNotFound = vmdisks.ReasonPVCNotFound
	// ReasonPVCNotBound (terminal): a disk's PVC is not Bound.
	ReasonPVCNotBound = vmdisks.ReasonPVCNotBound
	// ReasonVolumeModeNotBlock (terminal): a disk's PVC is not volumeMode Block.
	ReasonVolumeModeNotBlock = vmdisks.ReasonVolumeModeNotBlock
	// ReasonNoStorageMapping (terminal): no storage mapping for a PVC's StorageClass.
	ReasonNoStorageMapping = vmdisks.ReasonNoStorageMapping
	// ReasonTargetConflict (terminal): an object the flow must create already exists
	// on a workload cluster and was not made by this request.
	ReasonTargetConflict = "TargetConflict"
	// ReasonPortsExhausted (terminal): every port in 7000-7999 is taken in the zone.
	ReasonPortsExhausted = "PortsExhausted"
	// ReasonInitialSyncTimeout (terminal): the first full sync took longer than
	// spec.initialSyncTimeoutSeconds.
	ReasonInitialSyncTimeout = "InitialSyncTimeout"
	// ReasonGroupConflict (terminal): the named group belongs to another zone.
	ReasonGroupConflict = "GroupConflict"

	// ReasonReplicaUnscheduled (wait): the scheduler has not placed a replica
	// holder pod on a node; the message gives the scheduler's reason.
	ReasonReplicaUnscheduled = "ReplicaUnscheduled"
	// ReasonWaitingForAgent (wait): a drbd-node-agent has not reported its address.
	ReasonWaitingForAgent = "WaitingForAgent"
	// ReasonWaitingForVM (wait): the VM is stopping or starting.
	ReasonWaitingForVM = "WaitingForVM"
	// ReasonRequestFailed: a workload API call failed; retried with backoff.
	ReasonRequestFailed = "RequestFailed"
)

// Reasons while a deleted request removes protection (Ready=False, except the
// last two, which are ConditionUnprotecting's). Nothing here fails: every reason
// is a wait that ends by itself or by what its message asks the user to do.
const (
	// ReasonUnprotecting: removing protection is under way.
	ReasonUnprotecting = "Unprotecting"
	// ReasonFailedOver (hold): the VM runs on the DR cluster; fail back first or
	// set srv1alpha1.ForceUnprotectAnnotation.
	ReasonFailedOver = srv1alpha1.ReasonFailedOver
	// ReasonFailoverInProgress (hold): a FailoverRequest of the VM's group runs.
	ReasonFailoverInProgress = "FailoverInProgress"
	// ReasonWaitingForGroupSync: pg-sync has not yet removed the VM from the
	// group's workload copies, whose ProtectionGroup controllers would still
	// start and stop it.
	ReasonWaitingForGroupSync = "WaitingForGroupSync"
	// ReasonRemovingReplication: objects of the DRBD stack are being deleted.
	ReasonRemovingReplication = "RemovingReplication"
	// ReasonUnprotected (event): protection is removed and the finalizer dropped.
	ReasonUnprotected = "Unprotected"
	// ReasonStaysOnPrimary (ConditionUnprotecting): the VM stays on the primary,
	// back on its original PVCs; everything on both clusters is deleted.
	ReasonStaysOnPrimary = "VMStaysOnPrimary"
	// ReasonStaysOnDR (ConditionUnprotecting): forced while failed over; the VM
	// stays on the DR cluster on its DR backing PVCs, which are kept.
	ReasonStaysOnDR = "VMStaysOnDR"
)

// setCondition sets a condition of the request at its generation; setting
// Ready sets Reconciling and Stalled with it, as the request's trail does.
func setCondition(req *srv1alpha1.ProtectionRequest, typ string, status metav1.ConditionStatus, reason, format string, args ...any) {
	meta.SetStatusCondition(&req.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: flow.Truncate(fmt.Sprintf(format, args...), maxMessage),
		ObservedGeneration: req.Generation,
	})
	if typ == srv1alpha1.ConditionReady {
		flow.DeriveKStatus(&req.Status.Conditions, req.Generation, req.Status.Phase == srv1alpha1.ProtectionFailed)
	}
}
