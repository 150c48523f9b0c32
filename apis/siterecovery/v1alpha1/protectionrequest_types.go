package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ProtectionPhase is a step of the protection flow.
// +kubebuilder:validation:Enum=Pending;Validating;ProvisioningTarget;CreatingReplication;WaitingForInitialSync;SwitchingFrontend;AddingToGroup;Protected;Failed
type ProtectionPhase string

// Phases of a ProtectionRequest, in order.
const (
	ProtectionPending               ProtectionPhase = "Pending"
	ProtectionValidating            ProtectionPhase = "Validating"
	ProtectionProvisioningTarget    ProtectionPhase = "ProvisioningTarget"
	ProtectionCreatingReplication   ProtectionPhase = "CreatingReplication"
	ProtectionWaitingForInitialSync ProtectionPhase = "WaitingForInitialSync"
	ProtectionSwitchingFrontend     ProtectionPhase = "SwitchingFrontend"
	ProtectionAddingToGroup         ProtectionPhase = "AddingToGroup"
	ProtectionProtected             ProtectionPhase = "Protected"
	ProtectionFailed                ProtectionPhase = "Failed"
)

// ReasonFailedOver (Ready=False while a deleted ProtectionRequest removes
// protection): the VM runs on the DR cluster, so removal holds until the
// operator fails the group back or forces it with ForceUnprotectAnnotation.
const ReasonFailedOver = "FailedOver"

// ProtectionRequestSpec asks for one VM to be protected.
type ProtectionRequestSpec struct {
	// virtualMachine is the VM to protect, on the zone's primary cluster.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="virtualMachine is immutable; create a new ProtectionRequest"
	VirtualMachine VirtualMachineReference `json:"virtualMachine"`

	// zoneRef names the ProtectionZone whose clusters replicate the VM.
	// +required
	ZoneRef LocalObjectReference `json:"zoneRef"`

	// protectionGroupRef names the group the VM joins; it is created if missing.
	// +required
	ProtectionGroupRef ProtectionGroupReference `json:"protectionGroupRef"`

	// targetCluster is the DR cluster that receives the replica. Defaults to the
	// zone's only DR cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	TargetCluster string `json:"targetCluster,omitempty"`

	// protocol overrides the group's replication protocol for a new group.
	// +optional
	Protocol ReplicationProtocol `json:"protocol,omitempty"`

	// initialSyncTimeoutSeconds bounds the wait for the first full sync.
	// +optional
	// +kubebuilder:default=86400
	// +kubebuilder:validation:Minimum=1
	InitialSyncTimeoutSeconds int32 `json:"initialSyncTimeoutSeconds,omitempty"`
}

// ProtectedVolume is one replicated disk of the VM.
type ProtectedVolume struct {
	// disk is the VM's disk (volume) name.
	// +required
	Disk string `json:"disk"`
	// volume is the DRBD volume number.
	// +required
	Volume int32 `json:"volume"`
	// minor is the DRBD device minor (/dev/drbd<minor>).
	// +required
	Minor int32 `json:"minor"`
	// sourcePVC is the backing PVC on the primary cluster (the VM's original PVC).
	// +optional
	SourcePVC string `json:"sourcePVC,omitempty"`
	// targetPVC is the backing PVC created on the DR cluster.
	// +optional
	TargetPVC string `json:"targetPVC,omitempty"`
	// frontendPVC is the DRBD-backed PVC the VM's disk names after protection.
	// +optional
	FrontendPVC string `json:"frontendPVC,omitempty"`
	// metaPVC is the PVC, of the same name on both clusters, that holds DRBD's
	// metadata for this disk, so that no metadata is written into the disk.
	// +optional
	MetaPVC string `json:"metaPVC,omitempty"`
	// sizeBytes of the disk.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
}

// ProtectionRequestStatus is the audit trail of the protection flow.
type ProtectionRequestStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase is the current step.
	// +optional
	Phase ProtectionPhase `json:"phase,omitempty"`
	// phaseHistory records when each phase was entered.
	// +optional
	// +listType=atomic
	PhaseHistory []PhaseTransition `json:"phaseHistory,omitempty"`
	// drbdResourceName is the DRBDResource created on both clusters.
	// +optional
	DRBDResourceName string `json:"drbdResourceName,omitempty"`
	// port is the replication port allocated for the resource (7000-7999).
	// +optional
	Port int32 `json:"port,omitempty"`
	// volumes are the replicated disks.
	// +optional
	// +listType=map
	// +listMapKey=disk
	Volumes []ProtectedVolume `json:"volumes,omitempty"`
	// peerAuthentication is the DRBD shared secret both replicas were last
	// found on: its revision, never the secret. A Protected request reads its
	// peer-auth Secrets only when it is asked for a rotation or at its
	// periodic check, not on every reconcile.
	// +optional
	PeerAuthentication *PeerAuthStatus `json:"peerAuthentication,omitempty"`
	// startTime is when the flow started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the flow reached Protected or Failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// conditions: Ready, Validated, ReplicaProvisioned, InitialSyncComplete, FrontendSwitched.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ProtectionRequest protects a VM: it is validated on the primary, a DRBD replica is
// provisioned on the DR cluster, the VM is switched to DRBD-backed PVCs and added to
// its ProtectionGroup.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=preq
// +kubebuilder:printcolumn:name="VM",type=string,JSONPath=`.spec.virtualMachine.name`
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.protectionGroupRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProtectionRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the requested protection.
	// +required
	Spec ProtectionRequestSpec `json:"spec"`
	// status is the progress of the flow.
	// +optional
	Status ProtectionRequestStatus `json:"status,omitempty"`
}

// ProtectionRequestList is a list of ProtectionRequests.
// +kubebuilder:object:root=true
type ProtectionRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProtectionRequest `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ProtectionRequest{}, &ProtectionRequestList{})
}
