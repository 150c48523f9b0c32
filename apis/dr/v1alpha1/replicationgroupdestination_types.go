package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VolSyncProtectedPVC describes one PVC of the group to receive.
// +kubebuilder:validation:XValidation:rule="has(self.resources.requests) && 'storage' in self.resources.requests",message="resources.requests.storage is required: the destination PVC needs a size"
type VolSyncProtectedPVC struct {
	// name of the PVC.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// namespace of the PVC.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// storageClassName of the PVC.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// labels of the PVC, given to the PVC the destination receives into.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// accessModes of the PVC.
	// +optional
	// +listType=atomic
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// resources of the PVC.
	// +optional
	Resources corev1.VolumeResourceRequirements `json:"resources,omitempty"`
	// volumeMode of the PVC: the PVC the destination receives into is made
	// alike, since a mover copies a block device only into a block device and
	// files only into a file system.
	// +optional
	// +kubebuilder:validation:Enum=Block;Filesystem
	VolumeMode *corev1.PersistentVolumeMode `json:"volumeMode,omitempty"`
}

// VolSyncDestination is where the ReplicationDestination of one PVC listens.
type VolSyncDestination struct {
	// pvcName is the PVC the destination receives.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	PVCName string `json:"pvcName"`
	// address is the destination's address: the one its ReplicationDestination
	// publishes in status.rsyncTLS.address, or, with ServiceExports enabled,
	// the clusterset name of its exported service.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Address string `json:"address"`
}

// VolSyncReplicationDestinationSpec is one PVC's destination.
type VolSyncReplicationDestinationSpec struct {
	// protectedPVC is the PVC to receive.
	// +required
	ProtectedPVC VolSyncProtectedPVC `json:"protectedPVC"`
}

// ReplicationGroupDestinationSpec receives a consistency group.
type ReplicationGroupDestinationSpec struct {
	// volumeSnapshotClassSelector selects the VolumeSnapshotClass of the
	// destination snapshots.
	// +optional
	VolumeSnapshotClassSelector metav1.LabelSelector `json:"volumeSnapshotClassSelector,omitempty"`
	// rdSpecs has one entry per PVC of the group.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	RDSpecs []VolSyncReplicationDestinationSpec `json:"rdSpecs,omitempty"`
}

// LatestImage is the newest complete snapshot of one PVC.
type LatestImage struct {
	// pvcName is the PVC the snapshot belongs to.
	// +required
	PVCName string `json:"pvcName"`
	// snapshot is the VolumeSnapshot holding the image.
	// +required
	Snapshot corev1.TypedLocalObjectReference `json:"snapshot"`
}

// ReplicationGroupDestinationStatus is the progress of the receiving side.
type ReplicationGroupDestinationStatus struct {
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
	// latestImages are the newest complete snapshots, one per PVC.
	// +optional
	// +listType=map
	// +listMapKey=pvcName
	LatestImages []LatestImage `json:"latestImages,omitempty"`
	// replicationDestinations are the VolSync ReplicationDestinations.
	// +optional
	// +listType=atomic
	ReplicationDestinations []*corev1.ObjectReference `json:"replicationDestinations,omitempty"`
	// destinations are the addresses the ReplicationDestinations listen on,
	// one per PVC once its destination published it; the quorum tier relays
	// them to the primary's ReplicationGroupSource.
	// +optional
	// +listType=map
	// +listMapKey=pvcName
	// +kubebuilder:validation:MaxItems=100
	Destinations []VolSyncDestination `json:"destinations,omitempty"`
	// conditions of the destination.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ReplicationGroupDestination receives a CephFS consistency group replicated by a
// ReplicationGroupSource.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rgdst
// +kubebuilder:printcolumn:name="Last sync",type=date,JSONPath=`.status.lastSyncTime`
// +kubebuilder:printcolumn:name="Duration",type=string,JSONPath=`.status.lastSyncDuration`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ReplicationGroupDestination struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired destination.
	// +required
	Spec ReplicationGroupDestinationSpec `json:"spec"`
	// status is the progress.
	// +optional
	Status ReplicationGroupDestinationStatus `json:"status,omitempty"`
}

// ReplicationGroupDestinationList is a list of ReplicationGroupDestinations.
// +kubebuilder:object:root=true
type ReplicationGroupDestinationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReplicationGroupDestination `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ReplicationGroupDestination{}, &ReplicationGroupDestinationList{})
}
