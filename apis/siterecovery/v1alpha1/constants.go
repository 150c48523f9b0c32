package v1alpha1

// Labels, annotations and names shared by the tiers.
const (
	// LostQuorumTaintKey is the node taint the drbd-node-agent sets while a DRBD
	// resource that is Primary on the node has lost quorum (a Secondary's lost
	// quorum taints nothing: nothing runs from it); the failover-controller
	// removes it from target nodes only with force, after its safety check.
	LostQuorumTaintKey = "drbd.linbit.com/lost-quorum"

	// FailoverLockPrefix prefixes the per-group Lease; use FailoverLockName.
	FailoverLockPrefix = "failover-lock-"

	// FailoverLockTTLSeconds is the Lease duration: a crashed holder blocks other
	// failovers of its group for at most this long.
	FailoverLockTTLSeconds = 300

	// ManagedByLabel marks objects created by siterecovery on workload clusters.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel.
	ManagedByValue = "siterecovery"

	// ProtectionGroupLabel names the ProtectionGroup an object belongs to.
	ProtectionGroupLabel = "siterecovery.trilio.io/protection-group"
	// ZoneLabel names the ProtectionZone an object belongs to.
	ZoneLabel = "siterecovery.trilio.io/zone"

	// PreviousRunStrategyAnnotation keeps a VM's run strategy while the
	// ProtectionGroup controller holds it Halted, so that a start restores it.
	PreviousRunStrategyAnnotation = "siterecovery.trilio.io/previous-run-strategy"

	// ForceUnprotectAnnotation, set to "true" on a ProtectionRequest that is being
	// deleted while its VM runs on the DR cluster (the group failed over), removes
	// replication and leaves the VM running on the DR cluster, on its DR backing
	// PVCs. Without it the deletion is held until the group fails back.
	ForceUnprotectAnnotation = "siterecovery.trilio.io/force-unprotect"

	// ConfirmAnnotation must carry the protection group's name on a FailoverRequest
	// that is unplanned or forced: typing the name confirms a failover that may lose
	// the writes not yet replicated. The admission webhook refuses such a request
	// without it.
	ConfirmAnnotation = "siterecovery.trilio.io/confirm"

	// SourceFencedAnnotation, set to the protection group's name on an unplanned
	// FailoverRequest, confirms that the operator fenced the source cluster
	// (powered off its nodes or cut its replication network) while its API
	// server could not be reached and DRBD still showed it Primary. The
	// failover-controller then disconnects the target replicas from the source
	// and promotes them with force. Without it such a request holds with
	// FencingRequired rather than risk two Primaries.
	SourceFencedAnnotation = "siterecovery.trilio.io/source-fenced"

	// DiscardDivergedAnnotation, set to the group's name on a planned
	// FailoverRequest back to a cluster that was fenced off during an
	// unplanned failover, confirms that the writes made on that cluster since
	// it was fenced may be discarded: its replicas stayed Primary while the
	// other side was promoted with force, so their data diverged. The request
	// then resyncs the cluster from the active one before failing back.
	// Without it such a request holds with TargetRejoined=False.
	DiscardDivergedAnnotation = "siterecovery.trilio.io/discard-diverged"

	// FencedOffAnnotation, on the quorum copy of a ProtectionGroup, names the
	// cluster that an unplanned failover fenced off (SourceFencedAnnotation)
	// and that has not rejoined since: its replicas stayed Primary with data
	// that diverged. quorum-manager sets it before it fences the cluster off and
	// removes it once a planned failback has resynced that cluster. While it is
	// set, an unplanned FailoverRequest to that cluster holds: it would run the
	// group on the data the cluster had when it was fenced off. Removing it by
	// hand accepts that loss.
	FencedOffAnnotation = "siterecovery.trilio.io/fenced-off"

	// FencedOffByAnnotation, beside FencedOffAnnotation, is the UID of the
	// FailoverRequest that fenced the cluster off. Once the cluster has
	// returned and stood down, its diverged writes are discarded and it is
	// resynced from the active cluster, once per fencing: the UID tells one
	// fencing's discard from the next.
	FencedOffByAnnotation = "siterecovery.trilio.io/fenced-off-by"

	// HoldDivergedAnnotation, set to "true" on the quorum copy of a
	// ProtectionGroup, keeps a fenced-off cluster's diverged writes: when it
	// returns, it is stopped and demoted, and then held, disconnected, instead
	// of discarding them and resyncing from the active cluster. The operator
	// saves what they need from it (for example by cloning its PVCs), then
	// removes the annotation to let the discard run, or fails back with a
	// planned FailoverRequest annotated DiscardDivergedAnnotation.
	HoldDivergedAnnotation = "siterecovery.trilio.io/hold-diverged"

	// KubeconfigSecretKey is the default key of a cluster's kubeconfig Secret.
	KubeconfigSecretKey = "kubeconfig"

	// DRBDPortMin and DRBDPortMax bound the replication ports (TCP 7000-7999).
	DRBDPortMin = 7000
	DRBDPortMax = 7999
)

// FailoverLockName returns the name of the Lease that serialises failovers of a group.
func FailoverLockName(protectionGroup string) string {
	return FailoverLockPrefix + protectionGroup
}

// Labels and names of the DRBD storage stack that the protection flow builds on the
// workload clusters. The failover, test-failover and replication-monitor flows
// find those objects by them, so they are part of the API, not of one controller.
const (
	// ProtectionRequestLabel names the ProtectionRequest that created a workload
	// object.
	ProtectionRequestLabel = "siterecovery.trilio.io/protection-request"
	// DRNamespaceLabel names the DR namespace of that request, so that two DR
	// namespaces sharing workload clusters never confuse their objects.
	DRNamespaceLabel = "siterecovery.trilio.io/dr-namespace"
	// ObjectRoleLabel is ObjectRoleHolder on replica holder pods,
	// ObjectRoleFrontend on frontend PVs/PVCs and ObjectRoleBacking on DR backing
	// PVCs.
	ObjectRoleLabel = "siterecovery.trilio.io/role"

	// ObjectRoleHolder marks a replica holder pod.
	ObjectRoleHolder = "holder"
	// ObjectRoleFrontend marks a DRBD-backed frontend PV or PVC that a VM uses.
	ObjectRoleFrontend = "frontend"
	// ObjectRoleBacking marks the DR cluster's backing PVC of a replica.
	ObjectRoleBacking = "backing"
	// ObjectRoleMetadata marks the PVC, on either cluster, that holds a replica's
	// DRBD metadata, kept apart so that none is written into the VM's disk.
	ObjectRoleMetadata = "metadata"
)

// DRBDResourceName is the DRBDResource (and DRBD resource) of a VM on both sides.
func DRBDResourceName(vm string) string { return "vm-" + vm }
