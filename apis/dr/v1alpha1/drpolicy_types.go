package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// DRPolicySpec names the clusters of a DR relationship and its replication interval.
type DRPolicySpec struct {
	// drClusters are the two zone clusters that replicate to each other.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	DRClusters []string `json:"drClusters"`

	// schedulingInterval is how often data is replicated, as <number><m|h|d>. "0m"
	// means the storage provider manages replication itself and Ramen drives no RPO.
	// +required
	// +kubebuilder:validation:Pattern=`^\d+[mhd]$`
	SchedulingInterval string `json:"schedulingInterval"`

	// replicationClassSelector selects the VolumeReplicationClasses and
	// VolumeGroupReplicationClasses considered for peer classes.
	// +optional
	ReplicationClassSelector metav1.LabelSelector `json:"replicationClassSelector,omitempty"`

	// volumeSnapshotClassSelector selects VolumeSnapshotClasses for VolSync.
	// +optional
	VolumeSnapshotClassSelector metav1.LabelSelector `json:"volumeSnapshotClassSelector,omitempty"`
}

// PeerClass is a StorageClass that exists on both clusters with a replication
// relationship between them.
type PeerClass struct {
	// clusterIDs are the clusters the peer class spans.
	// +optional
	// +listType=atomic
	ClusterIDs []string `json:"clusterIDs,omitempty"`
	// storageClassName is the StorageClass name, the same on both clusters.
	// +required
	StorageClassName string `json:"storageClassName"`
	// storageID holds the StorageID of the class on each cluster, in clusterIDs order.
	// +optional
	// +listType=atomic
	StorageID []string `json:"storageID,omitempty"`
	// replicationID is the ReplicationID of a VolumeReplicationClass, if any.
	// +optional
	ReplicationID string `json:"replicationID,omitempty"`
	// groupreplicationID is the GroupReplicationID of the VolumeGroupReplicationClass.
	// +optional
	GroupReplicationID string `json:"groupreplicationID,omitempty"`
	// grouping is true when the class replicates volume groups.
	// +optional
	Grouping bool `json:"grouping,omitempty"`
	// offloaded is true when replication is offloaded to the storage array.
	// +optional
	Offloaded bool `json:"offloaded,omitempty"`
	// global is true when the VolumeGroupReplicationClasses on both sides carry
	// ramendr.openshift.io/global=true for the same GroupReplicationID.
	// +optional
	Global bool `json:"global,omitempty"`
}

// DRPolicyStatus is the observed state of a DRPolicy.
type DRPolicyStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// peerClasses discovered on the policy's clusters.
	// +optional
	// +listType=atomic
	PeerClasses []PeerClass `json:"peerClasses,omitempty"`
	// conditions: Validated.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DRPolicy describes a DR relationship between two clusters of a zone and the
// storage classes that replicate between them.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=drp
// +kubebuilder:printcolumn:name="Clusters",type=string,JSONPath=`.spec.drClusters`
// +kubebuilder:printcolumn:name="Interval",type=string,JSONPath=`.spec.schedulingInterval`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DRPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired policy.
	// +required
	Spec DRPolicySpec `json:"spec"`
	// status is the observed policy.
	// +optional
	Status DRPolicyStatus `json:"status,omitempty"`
}

// DRPolicyList is a list of DRPolicies.
// +kubebuilder:object:root=true
type DRPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DRPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DRPolicy{}, &DRPolicyList{})
}
