package pgsync

import (
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// scope is what one reconcile of a quorum ProtectionGroup works on.
type scope struct {
	group *srv1alpha1.ProtectionGroup
	// before is the group as read, to patch only what changed.
	before *srv1alpha1.ProtectionGroup
	now    time.Time

	// zone is the group's ProtectionZone; nil until loaded.
	zone *srv1alpha1.ProtectionZone
	// specErr explains why the group cannot be synced at all (bad spec, no zone).
	specErr error

	// sources are the group's VMs on the active cluster by "<namespace>/<name>";
	// a VM missing there has no entry.
	sources map[string]*kubevirtv1.VirtualMachine
	// foreign says, by the same key, why a VM that exists on the active
	// cluster is not a source: it carries another DR namespace's label.
	foreign map[string]string
	// sourcesErr explains why the active cluster's VMs could not be read; the
	// standby VMs are then left alone.
	sourcesErr error

	// companions are the group's companion objects read on the active
	// cluster, by companionKey; nil when not read. companionProblems are
	// the entries that name nothing that can be copied, and companionsErr
	// why the active cluster's companions could not be read (copies are
	// then left alone).
	companions        map[string]companion
	companionProblems []srv1alpha1.CompanionStatus
	companionsErr     error

	// clusters holds one result per zone cluster, in zone order.
	clusters []clusterResult
}

// clusterResult is what syncing one zone cluster found and did.
type clusterResult struct {
	name string
	// err is why the cluster could not be synced (unreachable, write failed);
	// reason is its condition reason.
	err    error
	reason string
	// currentState of the cluster's workload copy.
	currentState srv1alpha1.GroupState
	// vms is the VMs' state on the cluster, from its workload copy.
	vms []srv1alpha1.VMStatus
	// wrote is true when pg-sync changed the copy or a standby VM.
	wrote bool
	// drift lists what does not match the quorum copy.
	drift []string
	// companions is how each companion's copy stands on the cluster.
	companions []srv1alpha1.CompanionStatus
	// point is the last replication point the copy's controllers took.
	point *srv1alpha1.ConsistencyPoint
}

func (c clusterResult) inSync() bool { return c.err == nil && len(c.drift) == 0 }

func vmKey(namespace, name string) string { return namespace + "/" + name }

// pgSyncLabels are the labels of everything pg-sync writes for a group.
func pgSyncLabels(g *srv1alpha1.ProtectionGroup) map[string]string {
	return map[string]string{
		srv1alpha1.ZoneLabel:            g.Spec.ZoneRef.Name,
		srv1alpha1.ProtectionGroupLabel: g.Name,
		srv1alpha1.ManagedByLabel:       srv1alpha1.ManagedByValue,
	}
}
