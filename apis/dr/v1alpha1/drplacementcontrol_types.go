package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// DRAction is the DR action a DRPlacementControl is asked to perform.
// +kubebuilder:validation:Enum=Failover;Relocate
type DRAction string

const (
	// ActionFailover moves the application to failoverCluster without the source.
	ActionFailover DRAction = "Failover"
	// ActionRelocate moves the application to preferredCluster after both sides
	// become secondary.
	ActionRelocate DRAction = "Relocate"
)

// DRState is the phase of a DRPlacementControl.
type DRState string

// Phases of a DRPlacementControl.
const (
	DRStateInitiating  DRState = "Initiating"
	DRStateDeploying   DRState = "Deploying"
	DRStateDeployed    DRState = "Deployed"
	DRStateFailingOver DRState = "FailingOver"
	DRStateFailedOver  DRState = "FailedOver"
	DRStateRelocating  DRState = "Relocating"
	DRStateRelocated   DRState = "Relocated"
	DRStateDeleting    DRState = "Deleting"
)

// ProgressionStatus is the step inside a phase.
type ProgressionStatus string

// Progressions of a DRPlacementControl.
const (
	ProgressionCreatingMW                  ProgressionStatus = "CreatingMW"
	ProgressionWaitOnGlobalAction          ProgressionStatus = "WaitOnGlobalAction"
	ProgressionWaitForReadiness            ProgressionStatus = "WaitForReadiness"
	ProgressionFailingOverToCluster        ProgressionStatus = "FailingOverToCluster"
	ProgressionRunningFinalSync            ProgressionStatus = "RunningFinalSync"
	ProgressionPreparingFinalSync          ProgressionStatus = "PreparingFinalSync"
	ProgressionEnsuringVolumesAreSecondary ProgressionStatus = "EnsuringVolumesAreSecondary"
	ProgressionWaitingForResourceRestore   ProgressionStatus = "WaitingForResourceRestore"
	ProgressionUpdatedPlacement            ProgressionStatus = "UpdatedPlacement"
	ProgressionCleaningUp                  ProgressionStatus = "Cleaning Up"
	ProgressionSettingUpVolSyncDest        ProgressionStatus = "SettingUpVolSyncDest"
	ProgressionCompleted                   ProgressionStatus = "Completed"
	ProgressionDeleting                    ProgressionStatus = "Deleting"
)

// DRPlacementControlSpec places one application (a ProtectionGroup) on a cluster of
// its DRPolicy and moves it on request.
// +kubebuilder:validation:XValidation:rule="!has(self.action) || self.action != 'Failover' || (has(self.failoverCluster) && size(self.failoverCluster) > 0)",message="failoverCluster is required when action is Failover"
// +kubebuilder:validation:XValidation:rule="!has(self.action) || self.action != 'Relocate' || (has(self.preferredCluster) && size(self.preferredCluster) > 0)",message="preferredCluster is required when action is Relocate"
type DRPlacementControlSpec struct {
	// protectionGroupRef names the application: the ProtectionGroup whose VMs move.
	// +required
	ProtectionGroupRef srv1alpha1.LocalObjectReference `json:"protectionGroupRef"`

	// drPolicyRef names the DRPolicy in this namespace.
	// +required
	DRPolicyRef srv1alpha1.LocalObjectReference `json:"drPolicyRef"`

	// pvcSelector selects the application's PVCs on the workload clusters.
	// +required
	PVCSelector metav1.LabelSelector `json:"pvcSelector"`

	// preferredCluster is where the application runs normally, and the target of
	// a Relocate.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	PreferredCluster string `json:"preferredCluster,omitempty"`

	// failoverCluster is the target of a Failover.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	FailoverCluster string `json:"failoverCluster,omitempty"`

	// action is the DR action to perform: Failover or Relocate. Empty means deploy
	// on preferredCluster.
	// +optional
	Action DRAction `json:"action,omitempty"`
}

// PlacementDecision is where the application currently runs.
type PlacementDecision struct {
	// clusterName of the cluster.
	// +optional
	ClusterName string `json:"clusterName,omitempty"`
}

// DRPlacementControlStatus is the observed state of a DRPlacementControl.
type DRPlacementControlStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase is the DR phase (Deployed, FailingOver, FailedOver, Relocating, ...).
	// +optional
	Phase DRState `json:"phase,omitempty"`
	// progression is the step inside the phase, WaitOnGlobalAction while peer
	// DRPCs of the same global VGR have not agreed on the action.
	// +optional
	Progression ProgressionStatus `json:"progression,omitempty"`
	// preferredDecision is where the application runs.
	// +optional
	PreferredDecision PlacementDecision `json:"preferredDecision,omitempty"`
	// actionStartTime is when the current action started.
	// +optional
	ActionStartTime *metav1.Time `json:"actionStartTime,omitempty"`
	// actionDuration is how long the last action took.
	// +optional
	ActionDuration *metav1.Duration `json:"actionDuration,omitempty"`
	// lastGroupSyncTime is the last time the application's data was fully replicated.
	// +optional
	LastGroupSyncTime *metav1.Time `json:"lastGroupSyncTime,omitempty"`
	// lastUpdateTime is when the status was last written.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// conditions: Available, PeerReady, Protected, GlobalAction.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DRPlacementControl is the placement state machine of one application for the
// Offloaded and VolSync backends, with the global action consensus: every DRPC sharing a global VGR must
// request an action before any of them acts on it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=drpc
// +kubebuilder:printcolumn:name="Preferred",type=string,JSONPath=`.spec.preferredCluster`
// +kubebuilder:printcolumn:name="Failover",type=string,JSONPath=`.spec.failoverCluster`
// +kubebuilder:printcolumn:name="Action",type=string,JSONPath=`.spec.action`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progression",type=string,JSONPath=`.status.progression`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DRPlacementControl struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired placement.
	// +required
	Spec DRPlacementControlSpec `json:"spec"`
	// status is the observed placement.
	// +optional
	Status DRPlacementControlStatus `json:"status,omitempty"`
}

// DRPlacementControlList is a list of DRPlacementControls.
// +kubebuilder:object:root=true
type DRPlacementControlList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DRPlacementControl `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DRPlacementControl{}, &DRPlacementControlList{})
}
