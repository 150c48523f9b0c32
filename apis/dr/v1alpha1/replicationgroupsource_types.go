package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicationSourceTriggerSpec says when a sync cycle starts.
// +kubebuilder:validation:XValidation:rule="!(has(self.schedule) && has(self.manual))",message="set either schedule or manual, not both"
type ReplicationSourceTriggerSpec struct {
	// schedule is a cron expression for the cycles.
	// +optional
	// +kubebuilder:validation:Pattern=`^(@(annually|yearly|monthly|weekly|daily|hourly))|((((\d+,)*\d+|(\d+(\/|-)\d+)|\*(\/\d+)?)\s?){5})$`
	Schedule *string `json:"schedule,omitempty"`
	// manual starts one cycle each time its value changes.
	// +optional
	Manual string `json:"manual,omitempty"`
}

// ReplicationGroupSourceSpec snapshots a consistency group and replicates it.
type ReplicationGroupSourceSpec struct {
	// trigger says when a sync cycle starts.
	// +optional
	Trigger *ReplicationSourceTriggerSpec `json:"trigger,omitempty"`
	// volumeGroupSnapshotClassName is the class of the VolumeGroupSnapshots taken
	// each cycle.
	// +required
	// +kubebuilder:validation:MinLength=1
	VolumeGroupSnapshotClassName string `json:"volumeGroupSnapshotClassName"`
	// volumeGroupSnapshotSource selects the PVCs of the consistency group.
	// +required
	VolumeGroupSnapshotSource *metav1.LabelSelector `json:"volumeGroupSnapshotSource"`
	// destinations are where each PVC's ReplicationDestination on the peer
	// cluster listens, as that destination published it; a PVC without one
	// waits: no address is guessed.
	// +optional
	// +listType=map
	// +listMapKey=pvcName
	// +kubebuilder:validation:MaxItems=100
	Destinations []VolSyncDestination `json:"destinations,omitempty"`
}

// ReplicationGroupSourceStatus is the progress of the sync cycles.
type ReplicationGroupSourceStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// lastSyncTime is when the last cycle completed.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// lastSyncStartTime is when the current or last cycle started.
	// +optional
	LastSyncStartTime *metav1.Time `json:"lastSyncStartTime,omitempty"`
	// lastSyncDuration is how long the last cycle took.
	// +optional
	LastSyncDuration *metav1.Duration `json:"lastSyncDuration,omitempty"`
	// nextSyncTime is when the next scheduled cycle starts.
	// +optional
	NextSyncTime *metav1.Time `json:"nextSyncTime,omitempty"`
	// lastManualSync is the trigger.manual value of the last completed cycle.
	// +optional
	LastManualSync string `json:"lastManualSync,omitempty"`
	// currentVolumeGroupSnapshot is the snapshot of the cycle in progress.
	// +optional
	CurrentVolumeGroupSnapshot string `json:"currentVolumeGroupSnapshot,omitempty"`
	// previousVolumeGroupSnapshot is the base of the next incremental cycle
	// (enable-diff only).
	// +optional
	PreviousVolumeGroupSnapshot string `json:"previousVolumeGroupSnapshot,omitempty"`
	// replicationSources are the VolSync ReplicationSources of the cycle.
	// +optional
	// +listType=atomic
	ReplicationSources []*corev1.ObjectReference `json:"replicationSources,omitempty"`
	// conditions of the source.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ReplicationGroupSource replicates a CephFS consistency group with VolSync: each
// cycle takes a VolumeGroupSnapshot and syncs every PVC of it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rgsrc
// +kubebuilder:printcolumn:name="Last sync",type=date,JSONPath=`.status.lastSyncTime`
// +kubebuilder:printcolumn:name="Duration",type=string,JSONPath=`.status.lastSyncDuration`
// +kubebuilder:printcolumn:name="Next sync",type=date,JSONPath=`.status.nextSyncTime`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ReplicationGroupSource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired replication.
	// +required
	Spec ReplicationGroupSourceSpec `json:"spec"`
	// status is the progress.
	// +optional
	Status ReplicationGroupSourceStatus `json:"status,omitempty"`
}

// ReplicationGroupSourceList is a list of ReplicationGroupSources.
// +kubebuilder:object:root=true
type ReplicationGroupSourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReplicationGroupSource `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ReplicationGroupSource{}, &ReplicationGroupSourceList{})
}
