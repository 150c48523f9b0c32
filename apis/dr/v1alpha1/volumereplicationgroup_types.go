package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicationState is the desired replication role of a VRG.
// +kubebuilder:validation:Enum=primary;secondary
type ReplicationState string

const (
	// Primary means the application runs here and its data replicates out.
	Primary ReplicationState = "primary"
	// Secondary means this cluster receives the replicated data.
	Secondary ReplicationState = "secondary"
)

// State is the observed replication role of a VRG.
// +kubebuilder:validation:Enum=Primary;Secondary;Unknown
type State string

// Observed VRG states.
const (
	PrimaryState   State = "Primary"
	SecondaryState State = "Secondary"
	UnknownState   State = "Unknown"
)

// VRGAsyncSpec configures asynchronous replication.
type VRGAsyncSpec struct {
	// schedulingInterval is how often data is replicated, as <number><m|h|d>; "0m"
	// means the storage provider replicates on its own.
	// +required
	// +kubebuilder:validation:Pattern=`^\d+[mhd]$`
	SchedulingInterval string `json:"schedulingInterval"`
	// replicationClassSelector selects the VolumeGroupReplicationClass.
	// +optional
	ReplicationClassSelector metav1.LabelSelector `json:"replicationClassSelector,omitempty"`
	// volumeSnapshotClassSelector selects VolumeSnapshotClasses for VolSync.
	// +optional
	VolumeSnapshotClassSelector metav1.LabelSelector `json:"volumeSnapshotClassSelector,omitempty"`
	// peerClasses copied from the DRPolicy, so the VRG can map PVCs to replication
	// groups without reading the quorum cluster.
	// +optional
	// +listType=atomic
	PeerClasses []PeerClass `json:"peerClasses,omitempty"`
}

// VolumeReplicationGroupSpec is the desired replication state of one application's
// PVCs on one workload cluster.
type VolumeReplicationGroupSpec struct {
	// pvcSelector selects the application's PVCs in the VRG's namespace.
	// +required
	PVCSelector metav1.LabelSelector `json:"pvcSelector"`
	// replicationState is primary or secondary.
	// +required
	ReplicationState ReplicationState `json:"replicationState"`
	// action is the DR action that led to this state; it decides when PVCs count as
	// ready for secondary (Failover: not in use; Relocate: deleted and not in use).
	// +optional
	Action DRAction `json:"action,omitempty"`
	// async configures asynchronous replication.
	// +optional
	Async *VRGAsyncSpec `json:"async,omitempty"`
	// protectionGroupRef names the local ProtectionGroup whose VMs use the PVCs.
	// +optional
	ProtectionGroupRef string `json:"protectionGroupRef,omitempty"`
	// volSync is what a secondary VRG of a VolSync zone receives.
	// +optional
	VolSync *VRGVolSyncSpec `json:"volSync,omitempty"`
}

// VRGVolSyncSpec is the VolSync half of a VRG.
type VRGVolSyncSpec struct {
	// rdSpecs has one entry per PVC the secondary receives: the PVCs the
	// primary protects.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	RDSpecs []VolSyncReplicationDestinationSpec `json:"rdSpecs,omitempty"`
	// finalSync, when set on a primary VRG, runs one more sync cycle of every
	// consistency group, triggered with this value, in place of the schedule;
	// condition FinalSynced is True once each group completed it. A relocate
	// sets it once the application stopped, so that the target receives every
	// write.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	FinalSync string `json:"finalSync,omitempty"`
	// destinations, on a primary VRG, are where the secondary's destination
	// of each PVC listens, as the secondary VRG reports them; the quorum tier
	// copies them here.
	// +optional
	// +listType=map
	// +listMapKey=pvcName
	// +kubebuilder:validation:MaxItems=100
	Destinations []VolSyncDestination `json:"destinations,omitempty"`
}

// ProtectedPVC is the replication state of one PVC of the VRG.
type ProtectedPVC struct {
	// name of the PVC.
	// +required
	Name string `json:"name"`
	// namespace of the PVC.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// storageClassName of the PVC.
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`
	// storageID of the PVC's StorageClass.
	// +optional
	StorageID string `json:"storageID,omitempty"`
	// groupreplicationID of the replication group the PVC belongs to.
	// +optional
	GroupReplicationID string `json:"groupreplicationID,omitempty"`
	// protectedByVolSync is set when VolSync replicates the PVC; the quorum
	// tier then copies the PVC into the secondary VRG's spec.volSync.rdSpecs.
	// +optional
	ProtectedByVolSync bool `json:"protectedByVolSync,omitempty"`
	// labels of the PVC, given to the PVC the secondary receives into, so that
	// the VRG's pvcSelector selects it after a failover.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// accessModes of the PVC (VolSync only).
	// +optional
	// +listType=atomic
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// resources of the PVC (VolSync only).
	// +optional
	Resources corev1.VolumeResourceRequirements `json:"resources,omitempty"`
	// volumeMode of the PVC (VolSync only).
	// +optional
	// +kubebuilder:validation:Enum=Block;Filesystem
	VolumeMode *corev1.PersistentVolumeMode `json:"volumeMode,omitempty"`
	// destinationAddress, on a secondary (VolSync only), is where the PVC's
	// ReplicationDestination listens; empty until it published an address.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DestinationAddress string `json:"destinationAddress,omitempty"`
	// lastSyncTime is the last time the PVC was fully replicated.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// conditions: DataReady, DataProtected.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VolumeReplicationGroupStatus is the observed state of a VRG.
type VolumeReplicationGroupStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// state is Primary, Secondary or Unknown.
	// +optional
	State State `json:"state,omitempty"`
	// protectedPVCs holds the per-PVC state.
	// +optional
	// +listType=atomic
	ProtectedPVCs []ProtectedPVC `json:"protectedPVCs"`
	// lastGroupSyncTime is the oldest lastSyncTime of the protected PVCs.
	// +optional
	LastGroupSyncTime *metav1.Time `json:"lastGroupSyncTime,omitempty"`
	// lastUpdateTime is when the status was last written.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// conditions: DataReady, DataProtected, GlobalState, GlobalSecondary.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VolumeReplicationGroup protects one application's PVCs on one workload cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vrg
// +kubebuilder:printcolumn:name="DesiredState",type=string,JSONPath=`.spec.replicationState`
// +kubebuilder:printcolumn:name="CurrentState",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Global",type=string,JSONPath=`.metadata.labels.ramendr\.openshift\.io/global-vgr`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VolumeReplicationGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired replication state.
	// +required
	Spec VolumeReplicationGroupSpec `json:"spec"`
	// status is the observed replication state.
	// +optional
	Status VolumeReplicationGroupStatus `json:"status,omitempty"`
}

// VolumeReplicationGroupList is a list of VolumeReplicationGroups.
// +kubebuilder:object:root=true
type VolumeReplicationGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VolumeReplicationGroup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&VolumeReplicationGroup{}, &VolumeReplicationGroupList{})
}
