package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// GroupState is the desired or observed run state of a group's VMs.
type GroupState string

const (
	// StateRunning means every VM is Running and ready.
	StateRunning GroupState = "running"
	// StateStopped means every VM is Stopped and its VirtualMachineInstance is gone.
	StateStopped GroupState = "stopped"
	// StateStarting means VMs are being started and not all are ready yet.
	StateStarting GroupState = "starting"
	// StateStopping means VMs are being stopped and not all are gone yet.
	StateStopping GroupState = "stopping"
	// StateDegraded means a VM of the group is missing or failed.
	StateDegraded GroupState = "degraded"
)

// ReplicationSettings say how a group's disks are replicated.
type ReplicationSettings struct {
	// protocol is the DRBD protocol: A (asynchronous) or C (synchronous).
	// +optional
	// +kubebuilder:default=A
	Protocol ReplicationProtocol `json:"protocol,omitempty"`

	// rpoObjectiveSeconds is the longest acceptable replication lag; a longer lag
	// raises an RPOEvent.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	RPOObjectiveSeconds int32 `json:"rpoObjectiveSeconds,omitempty"`
}

// ProtectionGroupSpec is the desired state of a group of VMs that fail over together.
type ProtectionGroupSpec struct {
	// virtualMachines are the VMs of the group.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=500
	VirtualMachines []VirtualMachineReference `json:"virtualMachines,omitempty"`

	// desiredState asks the local ProtectionGroup controller to run or stop every VM
	// of the group. Only the workload copies set it; quorum-manager writes it.
	// +optional
	// +kubebuilder:validation:Enum=running;stopped
	DesiredState GroupState `json:"desiredState,omitempty"`

	// activeCluster is the zone cluster the group runs on (quorum copy only). A
	// successful FailoverRequest flips it to its target.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ActiveCluster string `json:"activeCluster,omitempty"`

	// zoneRef names the ProtectionZone of the group (quorum copy only).
	// +optional
	ZoneRef *LocalObjectReference `json:"zoneRef,omitempty"`

	// replication settings for the group's disks.
	// +optional
	Replication ReplicationSettings `json:"replication,omitempty"`

	// drbd is the DRBD role the failover-controller asks of every replica of the
	// group on this cluster (workload copies of DRBD groups only): one write per
	// group and step, which the local ProtectionGroup controller applies to the
	// group's DRBDResources and reports in status.drbd. Unset, the controller
	// leaves the replicas' roles to whoever set them (the protection flow).
	// +optional
	DRBD *GroupDRBDIntent `json:"drbd,omitempty"`

	// boot orders the start of the group's VMs wherever the group is asked
	// to run: stages that start in turn, each gated on its VMs' readiness.
	// Unset, every VM starts at once. pg-sync copies it to the workload
	// copies.
	// +optional
	Boot *BootPlan `json:"boot,omitempty"`

	// companions are the ConfigMaps, Secrets, Services, instancetypes and
	// preferences the group's VMs need on the cluster that takes them over
	// (quorum copy only): pg-sync keeps copies of them on every zone cluster
	// other than the active one.
	// +optional
	Companions *CompanionObjects `json:"companions,omitempty"`

	// networkMappings override the zone's: an entry for an ordered pair of
	// clusters replaces the zone's entry for that pair whole (quorum copy
	// only; pg-sync applies it to the standby VMs).
	// +optional
	// +listType=map
	// +listMapKey=sourceCluster
	// +listMapKey=targetCluster
	// +kubebuilder:validation:MaxItems=56
	NetworkMappings []NetworkMapping `json:"networkMappings,omitempty"`

	// consistency asks for application-consistent replication points
	// (quorum copy; pg-sync copies it to the workload copies, whose
	// controllers take VolSync and array points).
	// +optional
	Consistency *ConsistencySpec `json:"consistency,omitempty"`

	// drill runs test failovers of the group on a schedule (quorum copy
	// only).
	// +optional
	Drill *DrillSchedule `json:"drill,omitempty"`
}

// GroupDRBDIntent is the role asked of a group's replicas on one cluster.
// +kubebuilder:validation:XValidation:rule="!has(self.force) || !self.force || self.role == 'Primary'",message="force applies to role Primary only"
type GroupDRBDIntent struct {
	// role is Primary or Secondary.
	// +required
	// +kubebuilder:validation:Enum=Primary;Secondary
	Role DRBDRole `json:"role"`
	// force lets a promotion be forced on the replicas where DRBD refuses or
	// would refuse a normal one (not promotable, refused, or cut off a fenced
	// peer). Only an unplanned failover sets it: it may lose the writes the
	// replica had not received.
	// +optional
	Force bool `json:"force,omitempty"`
	// quorum is set with the role; unset, each replica keeps its own.
	// +optional
	Quorum *QuorumSettings `json:"quorum,omitempty"`
}

// GroupDRBDStatus is the DRBD state of a group's replicas on one cluster, as
// the local ProtectionGroup controller applied and observed it.
type GroupDRBDStatus struct {
	// appliedGeneration is the metadata.generation whose spec.drbd is set on
	// every replica of the group: a failover step waits for it before it trusts
	// the replicas' state to answer its intent.
	// +optional
	AppliedGeneration int64 `json:"appliedGeneration,omitempty"`
	// replicas is the state of each VM's DRBDResource on this cluster.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=500
	Replicas []ReplicaRoleStatus `json:"replicas,omitempty"`
	// taintedNodes are the nodes of the replicas that carry the
	// drbd.linbit.com/lost-quorum taint the node agents set.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=500
	TaintedNodes []string `json:"taintedNodes,omitempty"`
}

// ReplicaRoleStatus is one VM's replica as its agent reports it.
type ReplicaRoleStatus struct {
	// name of the DRBDResource.
	// +required
	Name string `json:"name"`
	// namespace of the DRBDResource (the VM's).
	// +required
	Namespace string `json:"namespace"`
	// nodeName the replica runs on.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// role as DRBD reports it (Primary, Secondary, Unknown).
	// +optional
	Role string `json:"role,omitempty"`
	// promotable: DRBD would accept a normal promotion now.
	// +optional
	Promotable bool `json:"promotable,omitempty"`
	// upToDate: every local volume is UpToDate.
	// +optional
	UpToDate bool `json:"upToDate,omitempty"`
	// connected: every peer is connected.
	// +optional
	Connected bool `json:"connected,omitempty"`
	// peerPrimary: a peer is Primary.
	// +optional
	PeerPrimary bool `json:"peerPrimary,omitempty"`
	// message says why the last role change was refused, if it was.
	// +optional
	Message string `json:"message,omitempty"`
}

// VMStatus is the observed state of one VM of a group.
type VMStatus struct {
	// name of the VirtualMachine.
	// +required
	Name string `json:"name"`
	// namespace of the VirtualMachine.
	// +required
	Namespace string `json:"namespace"`
	// printableStatus as KubeVirt reports it (Running, Stopped, Starting, ...), or
	// Missing when the VM does not exist.
	// +optional
	PrintableStatus string `json:"printableStatus,omitempty"`
	// ready mirrors the VM's status.ready.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// since is when printableStatus last changed.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// message explains a problem with this VM.
	// +optional
	Message string `json:"message,omitempty"`
}

// ClusterGroupState is the state of one workload copy as the quorum tier sees it.
type ClusterGroupState struct {
	// cluster is the zone cluster name.
	// +required
	Cluster string `json:"cluster"`
	// currentState of the workload copy.
	// +optional
	CurrentState GroupState `json:"currentState,omitempty"`
	// inSync is true when the workload copy's spec matches the quorum copy.
	// +optional
	InSync bool `json:"inSync,omitempty"`
	// lastSyncTime is when the workload copy was last written or confirmed.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// message describes drift or an error reaching the cluster.
	// +optional
	Message string `json:"message,omitempty"`
	// virtualMachines is the state of the group's VMs on this cluster, as its
	// workload copy last reported it: which cluster runs each VM, and the
	// state of its standby elsewhere, without reading the workload clusters.
	// Empty while the cluster cannot be read.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=500
	VirtualMachines []VMStatus `json:"virtualMachines,omitempty"`
}

// ProtectionGroupStatus is the observed state of a ProtectionGroup.
type ProtectionGroupStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// currentState is running when every VM is Running and ready, stopped when every
	// VM is Stopped and its VirtualMachineInstance is gone, otherwise starting,
	// stopping or degraded.
	// +optional
	CurrentState GroupState `json:"currentState,omitempty"`

	// virtualMachines holds the per-VM state (workload copies).
	// +optional
	// +listType=atomic
	VirtualMachines []VMStatus `json:"virtualMachines,omitempty"`

	// drbd is the state of the group's replicas on this cluster (workload
	// copies of DRBD groups).
	// +optional
	DRBD *GroupDRBDStatus `json:"drbd,omitempty"`

	// boot is how the group's current start on this cluster goes, stage by
	// stage (workload copies of groups with a boot plan).
	// +optional
	Boot *BootStatus `json:"boot,omitempty"`

	// companions is how each companion object's copy stands on each
	// cluster (quorum copy of a group with spec.companions).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=512
	Companions []CompanionStatus `json:"companions,omitempty"`

	// consistency is the consistency of the group's last replication point.
	// +optional
	Consistency *ConsistencyStatus `json:"consistency,omitempty"`

	// drill is where the group's scheduled drills stand (quorum copy).
	// +optional
	Drill *DrillStatus `json:"drill,omitempty"`

	// clusters holds the state of every workload copy (quorum copy).
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Clusters []ClusterGroupState `json:"clusters,omitempty"`

	// conditions: Ready, Degraded, Synced.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// divergence is what the last fenced-off cluster that returned had
	// written while it was cut off, as its DRBD counted it (quorum copy). It is
	// set with the Diverged condition's report and kept after the rejoin, until
	// the next report.
	// +optional
	Divergence *GroupDivergence `json:"divergence,omitempty"`

	// history is the outcome of the group's last failover requests (quorum copy),
	// newest first, so that deleting a finished request loses nothing an operator
	// needs.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	History []RequestRecord `json:"history,omitempty"`
}

// GroupDivergence is what a returned fenced-off cluster wrote while it was
// cut off: the blocks DRBD there held out of sync for the active cluster.
type GroupDivergence struct {
	// cluster is the cluster that returned.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster"`
	// bytes is the sum over the group's VMs.
	// +required
	// +kubebuilder:validation:Minimum=0
	Bytes int64 `json:"bytes"`
	// virtualMachines holds each VM's share.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=500
	VirtualMachines []VMDivergence `json:"virtualMachines,omitempty"`
	// reportTime is when the figures were read.
	// +required
	ReportTime metav1.Time `json:"reportTime"`
}

// VMDivergence is one VM's share of a GroupDivergence.
type VMDivergence struct {
	// name is the VM's "namespace/name".
	// +required
	// +kubebuilder:validation:MaxLength=317
	Name string `json:"name"`
	// bytes is what DRBD held out of sync for its disks.
	// +required
	// +kubebuilder:validation:Minimum=0
	Bytes int64 `json:"bytes"`
}

// GroupHistoryLength is how many requests ProtectionGroupStatus.History keeps.
const GroupHistoryLength = 10

// RequestRecord is what a finished request did to its group.
type RequestRecord struct {
	// kind of the request, e.g. FailoverRequest.
	Kind string `json:"kind"`
	// name of the request.
	Name string `json:"name"`
	// uid of the request, which tells two requests of one name apart.
	// +optional
	UID string `json:"uid,omitempty"`
	// type of the failover: planned or unplanned.
	// +optional
	Type string `json:"type,omitempty"`
	// sourceCluster the group ran on before the request.
	// +optional
	SourceCluster string `json:"sourceCluster,omitempty"`
	// targetCluster the request asked for.
	// +optional
	TargetCluster string `json:"targetCluster,omitempty"`
	// outcome is the request's terminal phase (Completed or Failed).
	Outcome string `json:"outcome"`
	// reason of the outcome, e.g. FailoverCompleted, DrainTimeout, Cancelled.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message of the outcome.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// startTime is when the request took the group's lock.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the request reached its outcome.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// phases are the phases the request went through with their entry times.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Phases []PhaseTransition `json:"phases,omitempty"`
}

// ProtectionGroup is the set of VMs of one application that fail over together.
// The copy in the quorum cluster's DR namespace is the source of truth; pg-sync
// writes a copy to each workload cluster, where the local ProtectionGroup
// controller runs or stops the VMs.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pg
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.spec.activeCluster`
// +kubebuilder:printcolumn:name="Desired",type=string,JSONPath=`.spec.desiredState`
// +kubebuilder:printcolumn:name="Current",type=string,JSONPath=`.status.currentState`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProtectionGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired group.
	// +optional
	Spec ProtectionGroupSpec `json:"spec,omitempty"`
	// status is the observed group.
	// +optional
	Status ProtectionGroupStatus `json:"status,omitempty"`
}

// ProtectionGroupList is a list of ProtectionGroups.
// +kubebuilder:object:root=true
type ProtectionGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProtectionGroup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ProtectionGroup{}, &ProtectionGroupList{})
}
