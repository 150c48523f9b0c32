package v1alpha1

// Condition types shared by several kinds, of both API groups: each is defined
// here once, and a controller names it from here.
const (
	// ConditionReady is True when the object reached its goal. Every kind the
	// product reconciles sets it, with Reconciling and Stalled beside it (see
	// ConditionReconciling), so that kstatus (sigs.k8s.io/cli-utils
	// pkg/kstatus/status), kubectl wait, Argo CD and Flux read every kind the
	// same way.
	ConditionReady = "Ready"
	// ConditionReconciling is True while the controller works towards Ready and
	// expects to get there on its own (a phase runs, a wait resolves by
	// itself); absent otherwise. kstatus reads it as InProgress.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the object cannot progress without the
	// operator: a request that failed, or a hold that waits on an operator's
	// action or a spec change (see NeedsOperator); absent otherwise. kstatus
	// reads it as Failed.
	ConditionStalled = "Stalled"
	// ConditionDegraded is True when part of the object does not work as asked.
	ConditionDegraded = "Degraded"
	// ConditionReachable is True while a workload cluster's API server answers.
	ConditionReachable = "Reachable"
	// ConditionSynced is True when the workload copies match the quorum copy.
	ConditionSynced = "Synced"
	// ConditionValidated is True once a request's or a DRPolicy's spec and what
	// it names were checked.
	ConditionValidated = "Validated"
)

// Reasons shared by several kinds.
const (
	ReasonReconciled          = "Reconciled"
	ReasonProgressing         = "Progressing"
	ReasonVMNotFound          = "VirtualMachineNotFound"
	ReasonKubeconfigInvalid   = "KubeconfigInvalid"
	ReasonKubeconfigForbidden = "KubeconfigNotAllowed"
	ReasonSecretNotFound      = "SecretNotFound"
	ReasonAPIServerReachable  = "APIServerReachable"
	ReasonAPIServerDown       = "APIServerUnreachable"
	ReasonInvalidSpec         = "InvalidSpec"
	ReasonInSync              = "InSync"
	ReasonDrift               = "Drift"
	// ReasonClusterUnreachable: a workload cluster could not be read or
	// written; retried until it answers.
	ReasonClusterUnreachable = "ClusterUnreachable"
	// ReasonSyncing: data is being replicated (an initial sync, a resync, a
	// VolSync cycle).
	ReasonSyncing = "Syncing"
	// ReasonZoneNotFound: no ProtectionZone matches what the object names.
	ReasonZoneNotFound = "ZoneNotFound"
	// ReasonNamespaceNotAllowed: a VM's namespace is not among the DR
	// namespace's protection.allowedNamespaces.
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	// ReasonSnapshotFailed: a VolumeSnapshot reported an error.
	ReasonSnapshotFailed = "SnapshotFailed"
	// ReasonStorageClassNotFound: a StorageClass a PVC needs does not exist.
	ReasonStorageClassNotFound = "StorageClassNotFound"
	// ReasonBootPlanStopped: a stage of the group's boot plan timed out or
	// failed and the plan's onStageTimeout is Stop, so its later stages'
	// VMs stay stopped until the operator starts them.
	ReasonBootPlanStopped = "BootPlanStopped"
)

// Reasons of an API call to a workload cluster that failed; retried with
// backoff.
const (
	ReasonReadFailed    = "ReadFailed"
	ReasonWriteFailed   = "WriteFailed"
	ReasonCreateFailed  = "CreateFailed"
	ReasonPatchFailed   = "PatchFailed"
	ReasonDeleteFailed  = "DeleteFailed"
	ReasonCleanupFailed = "CleanupFailed"
)

// NeedsOperator reports whether Ready=False with reason holds until the
// operator acts: a fix of a Secret or a spec, or a confirmation that only a
// person may give. The object is then Stalled rather than Reconciling, so that
// a health check flags it instead of showing it in progress for ever.
func NeedsOperator(reason string) bool {
	switch reason {
	case ReasonInvalidSpec, ReasonSecretNotFound, ReasonKubeconfigInvalid, ReasonKubeconfigForbidden,
		// A failover holds until the operator fences the old primary, or
		// confirms discarding the diverged data of a fenced-off site.
		ReasonSourcePrimaryConnected, ReasonTargetDiverged,
		// Removing protection of a failed-over VM holds until the operator
		// fails it back or forces the removal.
		ReasonFailedOver:
		return true
	}
	return false
}
