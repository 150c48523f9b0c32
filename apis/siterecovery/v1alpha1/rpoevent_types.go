package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RPOEventState says whether a breach is ongoing.
// +kubebuilder:validation:Enum=Active;Resolved
type RPOEventState string

const (
	// RPOEventActive means the lag still exceeds the objective.
	RPOEventActive RPOEventState = "Active"
	// RPOEventResolved means the lag fell back under the objective.
	RPOEventResolved RPOEventState = "Resolved"
)

// RPOEventSpec identifies one breach episode. It is written once.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
type RPOEventSpec struct {
	// protectionGroupRef names the group whose lag exceeded its objective.
	// +required
	ProtectionGroupRef ProtectionGroupReference `json:"protectionGroupRef"`
	// rpoObjectiveSeconds is the objective in force when the breach began.
	// +required
	// +kubebuilder:validation:Minimum=1
	RPOObjectiveSeconds int32 `json:"rpoObjectiveSeconds"`
	// startTime is when the lag first exceeded the objective.
	// +required
	StartTime metav1.Time `json:"startTime"`
}

// RPOEventStatus tracks the episode.
type RPOEventStatus struct {
	// state is Active until the lag falls under the objective.
	// +optional
	State RPOEventState `json:"state,omitempty"`
	// peakLagSeconds is the largest lag seen during the episode.
	// +optional
	PeakLagSeconds int64 `json:"peakLagSeconds,omitempty"`
	// peakTime is when the peak lag was seen.
	// +optional
	PeakTime *metav1.Time `json:"peakTime,omitempty"`
	// endTime is when the lag fell back under the objective.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// affectedVMs are the VMs whose lag exceeded the objective.
	// +optional
	// +listType=set
	AffectedVMs []string `json:"affectedVMs,omitempty"`
	// message summarises the cause, e.g. the replication link being down.
	// +optional
	Message string `json:"message,omitempty"`
}

// RPOEvent records one episode of a group's replication lag exceeding its RPO
// objective, from start through its peak to its end.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.protectionGroupRef.name`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Peak",type=integer,JSONPath=`.status.peakLagSeconds`
// +kubebuilder:printcolumn:name="Start",type=date,JSONPath=`.spec.startTime`
// +kubebuilder:printcolumn:name="End",type=date,JSONPath=`.status.endTime`
type RPOEvent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec identifies the episode.
	// +required
	Spec RPOEventSpec `json:"spec"`
	// status tracks the episode.
	// +optional
	Status RPOEventStatus `json:"status,omitempty"`
}

// RPOEventList is a list of RPOEvents.
// +kubebuilder:object:root=true
type RPOEventList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RPOEvent `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RPOEvent{}, &RPOEventList{})
}
