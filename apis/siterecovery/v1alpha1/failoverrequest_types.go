package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// FailoverType says whether the source cluster takes part in the failover.
// +kubebuilder:validation:Enum=planned;unplanned
type FailoverType string

const (
	// FailoverPlanned stops the VMs on the source before the target is promoted;
	// no VM ever runs on both clusters and no data is lost.
	FailoverPlanned FailoverType = "planned"
	// FailoverUnplanned proceeds without the source (it may be unreachable) and
	// forces promotion where needed; writes inside the protocol's window may be lost.
	FailoverUnplanned FailoverType = "unplanned"
)

// FailoverPhase is a step of the failover flow.
// +kubebuilder:validation:Enum=Pending;FreezingOnSource;StoppingOnSource;WaitingForDRBD;StartingOnTarget;Completed;Failed
type FailoverPhase string

// Phases of a FailoverRequest, in order.
const (
	FailoverPending FailoverPhase = "Pending"
	// FailoverFreezingOnSource is entered only by a planned failover of a
	// DRBD group whose spec.consistency.mode is Application: the source
	// guests are frozen until the DR replicas hold every write, then asked
	// to stop while still frozen.
	FailoverFreezingOnSource FailoverPhase = "FreezingOnSource"
	FailoverStoppingOnSource FailoverPhase = "StoppingOnSource"
	FailoverWaitingForDRBD   FailoverPhase = "WaitingForDRBD"
	FailoverStartingOnTarget FailoverPhase = "StartingOnTarget"
	FailoverCompleted        FailoverPhase = "Completed"
	FailoverFailed           FailoverPhase = "Failed"
)

// Condition types of a FailoverRequest.
const (
	ConditionLockAcquired   = "LockAcquired"
	ConditionSourceStopped  = "SourceStopped"
	ConditionTargetPromoted = "TargetPromoted"
	ConditionTargetRunning  = "TargetRunning"
	ConditionDataLossRisk   = "DataLossPossible"
	// ConditionFencingRequired is True while an unplanned request holds because
	// the source's API server cannot be reached and DRBD still shows the source
	// Primary and connected; False once the source was confirmed fenced
	// (SourceFencedAnnotation) or demoted.
	ConditionFencingRequired = "FencingRequired"
	// ConditionTargetRejoined is set on a planned request back to a cluster
	// that was fenced off during an unplanned failover: False while the
	// request stops the group there, waits for DiscardDivergedAnnotation, and
	// resyncs the cluster's replicas from the source; True once they are
	// connected and in sync, after which the failback proceeds as planned.
	// An unplanned request to such a cluster holds with it False
	// (ReasonTargetFencedOff) and changes nothing.
	ConditionTargetRejoined = "TargetRejoined"
	// ConditionStoodDown is set on the quorum copy of a ProtectionGroup that
	// records a fenced-off cluster (FencedOffAnnotation): False while that
	// cluster is not reached yet or is being stopped and demoted, saying what
	// it waits for; True once the group is stopped there and its replicas
	// are Secondary. It goes with the record.
	ConditionStoodDown = "StoodDown"
	// ConditionDiverged is set on the quorum copy of a ProtectionGroup whose
	// fenced-off cluster returned with writes made while it was cut off:
	// True while they are being discarded (ReasonDiscardingDiverged) or are
	// kept by HoldDivergedAnnotation (ReasonDivergedHeld), saying how much
	// diverged on which VMs; False (ReasonDivergedDiscarded) once the cluster
	// was resynced from the active one.
	ConditionDiverged = "Diverged"
)

// Reasons of a FailoverRequest.
const (
	ReasonLockHeld = "LockHeldByOtherRequest"
	// ReasonCancelled: the request was deleted before it moved any DRBD role;
	// the group was left, or put back, running on its source.
	ReasonCancelled       = "Cancelled"
	ReasonAlreadyOnTarget = "AlreadyOnTarget"
	// ReasonFailoverCompleted (Ready=True): the group runs on the target.
	ReasonFailoverCompleted = "FailoverCompleted"
	ReasonGroupNotFound     = "ProtectionGroupNotFound"
	ReasonInvalidTarget     = "InvalidTargetCluster"
	ReasonDrainTimeout      = "DrainTimeout"
	ReasonBootTimeout       = "BatchBootTimeout"
	ReasonTaintConflict     = "TaintRemovalBlocked"
	ReasonSourceUnreachable = "SourceUnreachable"
	ReasonUnplanned         = "UnplannedFailover"
	// ReasonLossRead: DataLossPossible gives the out-of-sync figures DRBD on
	// the source read when the promotion was decided.
	ReasonLossRead = "OutOfSyncReadAtPromotion"
	// ReasonLossLastReported: the source could not be asked, or not all of
	// it answered in time; DataLossPossible gives the figures last reported
	// and their time.
	ReasonLossLastReported = "OutOfSyncLastReported"
	// ReasonSourcePrimaryConnected holds an unplanned request: see
	// ConditionFencingRequired.
	ReasonSourcePrimaryConnected = "SourcePrimaryConnected"
	// ReasonSourceFenced: the operator confirmed the source fenced.
	ReasonSourceFenced = "SourceFenced"
	// ReasonSourceFencedOff: an unplanned failover fenced off a source its
	// target did not replicate from, before promoting (the source may still run).
	ReasonSourceFencedOff = "SourceFencedOff"
	// ReasonSourceDemoted: the source's API server answered again and the
	// source was stopped and demoted as in a planned failover.
	ReasonSourceDemoted = "SourceDemoted"
	// ReasonTargetNotUpToDate ends a planned request whose target did not
	// become UpToDate within drainTimeoutSeconds.
	ReasonTargetNotUpToDate = "TargetNotUpToDate"
	// ReasonTargetUnreachable ends a request whose target could not be reached
	// before anything was promoted there.
	ReasonTargetUnreachable = "TargetUnreachable"
	// ReasonTargetDiverged holds a failback to a fenced cluster until the
	// operator confirms its diverged writes may go (DiscardDivergedAnnotation).
	ReasonTargetDiverged = "TargetDiverged"
	// ReasonRejoining: the fenced cluster is being stopped, discarded and
	// resynced before the failback.
	ReasonRejoining = "Rejoining"
	// ReasonTargetFencedOff holds an unplanned request to a cluster that an
	// earlier unplanned failover fenced off and that has not rejoined since
	// (FencedOffAnnotation on the group).
	ReasonTargetFencedOff = "TargetFencedOff"
	// ReasonStoodDown (ConditionStoodDown True, and an event on the group): a
	// fenced-off cluster that answered again while the group runs elsewhere
	// was stopped and demoted.
	ReasonStoodDown = "StoodDown"
	// ReasonStandingDown (ConditionStoodDown False): the fenced-off cluster
	// is not reached yet, or its stop and demotion are under way.
	ReasonStandingDown = "StandingDown"
	// ReasonDiscardingDiverged (ConditionDiverged True): the returned
	// cluster's diverged writes are being discarded and it is resyncing.
	ReasonDiscardingDiverged = "DiscardingDiverged"
	// ReasonMeasuringDivergence (ConditionDiverged Unknown): the returned
	// cluster's agents are reading what DRBD holds out of sync there, for
	// the report.
	ReasonMeasuringDivergence = "MeasuringDivergence"
	// ReasonDivergedHeld (ConditionDiverged True): HoldDivergedAnnotation
	// keeps the returned cluster's diverged writes.
	ReasonDivergedHeld = "DivergedHeld"
	// ReasonDivergedDiscarded (ConditionDiverged False, and an event): the
	// returned cluster was resynced from the active one.
	ReasonDivergedDiscarded = "DivergedDiscarded"
	// ReasonFencedOffRecordGone (ConditionDiverged False): the group records
	// no fenced-off cluster any more, while the divergence was still held
	// or being discarded: a failback rejoined the cluster, or the operator
	// removed the record.
	ReasonFencedOffRecordGone = "FencedOffRecordGone"
)

// FailoverRequestSpec asks for a ProtectionGroup to move to a target cluster.
// The spec is immutable: a changed request is a new FailoverRequest.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable; create a new FailoverRequest"
type FailoverRequestSpec struct {
	// protectionGroupRef names the group to move.
	// +required
	ProtectionGroupRef ProtectionGroupReference `json:"protectionGroupRef"`

	// targetCluster is the zone cluster the group moves to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	TargetCluster string `json:"targetCluster"`

	// failoverType is planned (the source stops first) or unplanned (proceed without
	// the source, accepting the loss of writes inside the protocol's window).
	// +optional
	// +kubebuilder:default=planned
	FailoverType FailoverType `json:"failoverType,omitempty"`

	// drainTimeoutSeconds bounds how long the VMs may take to stop on the source.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	DrainTimeoutSeconds int32 `json:"drainTimeoutSeconds,omitempty"`

	// batchBootTimeoutSeconds bounds how long the VMs may take to run on the target.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	BatchBootTimeoutSeconds int32 `json:"batchBootTimeoutSeconds,omitempty"`

	// force removes DRBD quorum taints from target nodes even while another group
	// runs there, accepting disruption of that group.
	// +optional
	Force bool `json:"force,omitempty"`
}

// FailoverRequestStatus is the audit trail of a failover.
type FailoverRequestStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase is the current step.
	// +optional
	Phase FailoverPhase `json:"phase,omitempty"`
	// phaseHistory records when each phase was entered and why.
	// +optional
	// +listType=atomic
	PhaseHistory []PhaseTransition `json:"phaseHistory,omitempty"`
	// sourceCluster is the cluster the group ran on when the request started.
	// +optional
	SourceCluster string `json:"sourceCluster,omitempty"`
	// startTime is when the request left Pending.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the request reached Completed or Failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// message is a human-readable summary of the current phase or the failure.
	// +optional
	Message string `json:"message,omitempty"`
	// conditions: LockAcquired, Validated, SourceStopped, TargetPromoted,
	// TargetRunning, DataLossPossible, FencingRequired, Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// phaseTimings splits the time of each finished phase between waiting on
	// the workload clusters (VMs stopping or starting, DRBD changing role),
	// being held (the group's lock, a fencing confirmation, a taint another
	// group depends on) and the control plane (reconciles, queues, status
	// writes, caches catching up), so that a user can see where the seconds of
	// a failover went.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	PhaseTimings []PhaseTiming `json:"phaseTimings,omitempty"`
	// boot is how the group's boot plan ran on the target, stage by stage,
	// as the target's copy of the group reported it.
	// +optional
	Boot *BootStatus `json:"boot,omitempty"`
	// consistency is the point the target was promoted from, for a planned
	// failover of a group that asks for Application consistency (source
	// PlannedFailover): Application when every running source guest was
	// frozen until the DR replicas held its writes and then stopped frozen;
	// Crash, naming the VMs and why, otherwise.
	// +optional
	Consistency *ConsistencyPoint `json:"consistency,omitempty"`
}

// PhaseTiming is where the time of one phase went.
type PhaseTiming struct {
	// phase is the phase's name.
	// +required
	Phase string `json:"phase"`
	// workloadMilliseconds is the time the phase waited on the workload
	// clusters to act.
	// +optional
	WorkloadMilliseconds int64 `json:"workloadMilliseconds,omitempty"`
	// heldMilliseconds is the time the phase was held by something only time
	// or an operator resolves: the group's lock, a fencing confirmation, a
	// taint another group depends on.
	// +optional
	HeldMilliseconds int64 `json:"heldMilliseconds,omitempty"`
	// controlPlaneMilliseconds is the rest of the phase: quorum-manager's own
	// work and the delays between an event and the reconcile it wakes. Time
	// quorum-manager was down, and what a phase waited before a restart,
	// counts here.
	// +optional
	ControlPlaneMilliseconds int64 `json:"controlPlaneMilliseconds,omitempty"`
	// stages splits the phase that starts the group on the target across
	// the stages of its boot plan.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=17
	Stages []StageTiming `json:"stages,omitempty"`
}

// StageTiming is the time one boot stage took.
type StageTiming struct {
	// stage is the stage's name.
	// +required
	Stage string `json:"stage"`
	// milliseconds from the stage's start to its end (or to the end of the
	// phase, for a stage that had not ended).
	// +optional
	Milliseconds int64 `json:"milliseconds,omitempty"`
	// phase is how the stage ended: Succeeded, TimedOut, Failed, Skipped, or
	// the phase it was in.
	// +optional
	Phase BootStagePhase `json:"phase,omitempty"`
}

// FailoverRequest moves a ProtectionGroup to another cluster of its zone. Its status
// is the audit trail of what happened, in what order, and when.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=fr
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.protectionGroupRef.name`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetCluster`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.failoverType`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FailoverRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the requested failover.
	// +required
	Spec FailoverRequestSpec `json:"spec"`
	// status is the progress and audit trail.
	// +optional
	Status FailoverRequestStatus `json:"status,omitempty"`
}

// FailoverRequestList is a list of FailoverRequests.
// +kubebuilder:object:root=true
type FailoverRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FailoverRequest `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FailoverRequest{}, &FailoverRequestList{})
}

// FailoverRequestFinalizer holds the deletion of an unfinished FailoverRequest
// until its flow has reached a safe resting point and its outcome is recorded in
// the group's history.
const FailoverRequestFinalizer = "siterecovery.trilio.io/failover-request"

// FailoverDeletionRefusal returns why a FailoverRequest in phase p may not be
// deleted now, or "" when it may. While DRBD roles change, stopping the flow
// would leave the group with no Primary or with a promotion half done; the
// admission webhook refuses the deletion, and the controller does not stop there
// either.
func FailoverDeletionRefusal(p FailoverPhase) string {
	if p == FailoverWaitingForDRBD {
		return "its DRBD roles are changing; it cannot stop safely until the target is promoted (phase StartingOnTarget) or the request ends; retry in a few seconds"
	}
	return ""
}

// FailoverDeletionEffect says what deleting a FailoverRequest in phase p does
// before it goes, for the admission warning and the request's events.
func FailoverDeletionEffect(p FailoverPhase) string {
	switch p {
	case "", FailoverPending:
		return "the request had not started; it goes at once and the group stays where it runs"
	case FailoverFreezingOnSource, FailoverStoppingOnSource:
		return "the group is asked to run on its source again (nothing was promoted), then the request goes"
	case FailoverStartingOnTarget:
		return "the target is already promoted; the request finishes starting the group there, records the outcome, then goes"
	case FailoverCompleted, FailoverFailed:
		return "the request is finished; its outcome stays in the group's status.history"
	}
	return ""
}
