package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ReplicationHealth summarises a group's replication.
// +kubebuilder:validation:Enum=Healthy;Syncing;Degraded;Disconnected;Unknown
type ReplicationHealth string

// Health values, from best to worst.
const (
	HealthHealthy      ReplicationHealth = "Healthy"
	HealthSyncing      ReplicationHealth = "Syncing"
	HealthDegraded     ReplicationHealth = "Degraded"
	HealthDisconnected ReplicationHealth = "Disconnected"
	HealthUnknown      ReplicationHealth = "Unknown"
)

// ReplicationGroupStatusSpec configures the monitoring of one group.
type ReplicationGroupStatusSpec struct {
	// protectionGroupRef names the monitored group.
	// +required
	ProtectionGroupRef ProtectionGroupReference `json:"protectionGroupRef"`
	// rpoObjectiveSeconds is the lag above which an RPOEvent is raised. Defaults to
	// the group's replication.rpoObjectiveSeconds.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	RPOObjectiveSeconds int32 `json:"rpoObjectiveSeconds,omitempty"`
	// pollingIntervalSeconds bounds how stale the status may be.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	PollingIntervalSeconds int32 `json:"pollingIntervalSeconds,omitempty"`
}

// VolumeReplicationState is the replication state of one DRBD volume.
type VolumeReplicationState struct {
	// volume is the DRBD volume number.
	// +required
	Volume int32 `json:"volume"`
	// connectionState of the DRBD connection (Connected, Connecting, StandAlone, ...).
	// +optional
	ConnectionState string `json:"connectionState,omitempty"`
	// diskState of the active side's disk.
	// +optional
	DiskState string `json:"diskState,omitempty"`
	// peerDiskState of the replica's disk as the active side sees it.
	// +optional
	PeerDiskState string `json:"peerDiskState,omitempty"`
	// replicationState (Established, SyncSource, SyncTarget, Off, ...).
	// +optional
	ReplicationState string `json:"replicationState,omitempty"`
	// percentInSync of the replica, as a decimal string with two places ("99.50").
	// +optional
	PercentInSync string `json:"percentInSync,omitempty"`
	// outOfSyncBytes still to be sent to the replica.
	// +optional
	OutOfSyncBytes int64 `json:"outOfSyncBytes,omitempty"`
	// lagSeconds is how old the oldest write the replica may lack is. It is 0
	// while the volume is in sync: Connected, replicationState Established, the
	// replica UpToDate and 0 bytes out of sync. Otherwise it is the whole seconds
	// from lastInSyncTime to the monitor's evaluation (the data the replica lacks
	// was written no earlier than lastInSyncTime); for a volume never seen in sync
	// it counts from the active side's DRBDResource creation. When the active
	// side cannot be read, the replica's own view (its connection to the active
	// side and its disk state) decides whether the volume is in sync.
	// +optional
	LagSeconds int64 `json:"lagSeconds,omitempty"`
	// lastInSyncTime is, while the volume is in sync, when it (re)gained sync;
	// once it falls out of sync, the last moment it was known fully in sync: the
	// active side's Connected condition transition when the link dropped,
	// otherwise the first evaluation that found it out of sync. Kept in status so
	// that lag survives restarts of the monitor.
	// +optional
	LastInSyncTime *metav1.Time `json:"lastInSyncTime,omitempty"`
}

// VMReplicationState is the replication state of one VM's DRBDResource.
type VMReplicationState struct {
	// name of the VM.
	// +required
	Name string `json:"name"`
	// namespace of the VM.
	// +required
	Namespace string `json:"namespace"`
	// drbdResource is the DRBDResource that replicates the VM.
	// +optional
	DRBDResource string `json:"drbdResource,omitempty"`
	// failoverReady is true when the DR replica is UpToDate on every volume and
	// promotable, or would be but for the connected Primary that a planned
	// failover demotes first; and, when the active side can be read, it sees the
	// replica UpToDate with nothing out of sync.
	// +optional
	FailoverReady bool `json:"failoverReady,omitempty"`
	// volumes holds the per-volume state.
	// +optional
	// +listType=map
	// +listMapKey=volume
	Volumes []VolumeReplicationState `json:"volumes,omitempty"`
}

// ReplicationGroupStatusStatus is the aggregated replication state of a group.
type ReplicationGroupStatusStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// health is the worst state of any volume.
	// +optional
	Health ReplicationHealth `json:"health,omitempty"`
	// failoverReady is true when every VM's DR replica is UpToDate and promotable.
	// +optional
	FailoverReady bool `json:"failoverReady,omitempty"`
	// maxLagSeconds is the largest lagSeconds of any volume.
	// +optional
	MaxLagSeconds int64 `json:"maxLagSeconds,omitempty"`
	// lastUpdateTime is when the status last changed. The monitor re-evaluates
	// at least every spec.pollingIntervalSeconds but writes only on change.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// activeRPOEvent names the RPOEvent of an ongoing breach.
	// +optional
	ActiveRPOEvent string `json:"activeRPOEvent,omitempty"`
	// virtualMachines holds the per-VM state.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	VirtualMachines []VMReplicationState `json:"virtualMachines,omitempty"`
	// conditions: Ready, RPOMet.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ReplicationGroupStatus is the replication health of one ProtectionGroup,
// aggregated from the DRBDResources on both clusters. It is eventually consistent:
// it may be up to spec.pollingIntervalSeconds old.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rgs
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.protectionGroupRef.name`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="FailoverReady",type=boolean,JSONPath=`.status.failoverReady`
// +kubebuilder:printcolumn:name="Lag",type=integer,JSONPath=`.status.maxLagSeconds`
// +kubebuilder:printcolumn:name="RPO",type=integer,JSONPath=`.spec.rpoObjectiveSeconds`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ReplicationGroupStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec configures the monitoring.
	// +required
	Spec ReplicationGroupStatusSpec `json:"spec"`
	// status is the aggregated state.
	// +optional
	Status ReplicationGroupStatusStatus `json:"status,omitempty"`
}

// ReplicationGroupStatusList is a list of ReplicationGroupStatuses.
// +kubebuilder:object:root=true
type ReplicationGroupStatusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReplicationGroupStatus `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ReplicationGroupStatus{}, &ReplicationGroupStatusList{})
}
