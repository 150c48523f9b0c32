package failover_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

var fullTrail = []string{"Pending", "StoppingOnSource", "WaitingForDRBD", "StartingOnTarget", "Completed"}

// TestPlannedFailoverAndFailback runs with the least-privilege kubeconfigs
// scripts/bootstrap-zone.sh mints, so the workload clusters' quorum identity is
// proven to grant what a failover and a failback do, on whole control planes,
// so the VMs run in launcher pods the scheduler places and kwok runs.
func TestPlannedFailoverAndFailback(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 3, minted: true, controlPlane: true})
	rec := z.recordVMIs()

	fr := z.waitPhase(z.failover("to-dr", env.DR, srv1alpha1.FailoverPlanned), srv1alpha1.FailoverCompleted)
	require.Equal(t, fullTrail, phases(fr), "the audit trail records every phase in order")
	require.Equal(t, env.Primary, fr.Status.SourceCluster)
	require.NotNil(t, fr.Status.StartTime)
	require.NotNil(t, fr.Status.CompletionTime)
	for _, c := range []string{srv1alpha1.ConditionLockAcquired, srv1alpha1.ConditionSourceStopped, srv1alpha1.ConditionTargetPromoted, srv1alpha1.ConditionTargetRunning, srv1alpha1.ConditionReady} {
		require.True(t, meta.IsStatusConditionTrue(fr.Status.Conditions, c), "condition %s", c)
	}
	require.Nil(t, meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionDataLossRisk), "a planned failover loses no data")
	z.assertActive(env.DR)
	z.waitGroup(env.Primary, srv1alpha1.StateStopped)
	for _, vm := range z.vms {
		require.Equal(t, "Primary", z.drbd(env.DR, vm).Status.Role)
		require.Equal(t, "Secondary", z.drbd(env.Primary, vm).Status.Role)
		require.False(t, z.drbd(env.DR, vm).Spec.ForcePromotion, "a planned failover never forces")
		require.True(t, rec.SawOn(env.DR, vm), "%s ran on the DR cluster", vm)
	}
	z.assertOnReplicaNodes(env.DR)
	z.assertLockReleased()

	// The group now lives on the DR cluster: a request back is a failback.
	fb := z.waitPhase(z.failover("back", env.Primary, srv1alpha1.FailoverPlanned), srv1alpha1.FailoverCompleted)
	require.Equal(t, fullTrail, phases(fb))
	require.Equal(t, env.DR, fb.Status.SourceCluster)
	z.assertActive(env.Primary)
	z.waitGroup(env.DR, srv1alpha1.StateStopped)
	for _, vm := range z.vms {
		require.Equal(t, "Primary", z.drbd(env.Primary, vm).Status.Role)
	}
	require.Empty(t, rec.Overlaps(), "no VM may run on both clusters at once in a planned flow")

	t.Run("UnplannedBesideAnotherGroup", func(t *testing.T) { unplannedBesideAnotherGroup(t, z.in(t)) })
}

// unplannedBesideAnotherGroup: a second group runs on the primary too, and
// the primary is partitioned away. The other group's DR replica, a Secondary,
// loses quorum on the node where a VM of this group must run; the unplanned
// failover of this group still starts its VMs there (the scheduler places
// their launcher pods: no lost-quorum taint is kept for a Secondary), and the
// other group stays protected: its DR replica is still Secondary, without
// quorum, so DRBD will not promote it, and nothing asked it to.
func unplannedBesideAnotherGroup(t *testing.T, z *zone) {
	shared := env.Nodes[env.DR]
	require.Equal(t, shared.Name, z.drbd(env.DR, z.vms[0]).Spec.NodeName, "a VM of the group runs from the shared node")
	fabric := z.DRBD(t)
	z.CreateReplica(t, env.Primary, env.DRBDReplica("other", "other-vm", env.Primary, env.DR, 0, 7900))
	z.CreateReplica(t, env.DR, env.DRBDReplica("other", "other-vm", env.DR, env.Primary, 1, 7900))
	z.waitDRBD(env.DR, "other-vm", "connected", func(r *srv1alpha1.DRBDResource) bool { return r.Status.MetadataCreated && len(r.Status.Peers) == 1 })
	require.NoError(t, fabric.MarkUpToDate(drbdName("other-vm"), env.Nodes[env.Primary].Name))
	z.setPrimary(env.Primary, "other-vm")
	z.waitDRBD(env.DR, "other-vm", "in sync with its Primary", func(r *srv1alpha1.DRBDResource) bool {
		return len(r.Status.Peers) == 1 && r.Status.Peers[0].PeerRole == "Primary" && r.Status.Quorum
	})
	z.create(env.Primary, env.WorkloadGroup("other", nil, srv1alpha1.StateRunning))
	z.create(env.DR, env.WorkloadGroup("other", nil, srv1alpha1.StateStopped))

	for _, vm := range append(slices.Clone(z.vms), "other-vm") {
		require.NoError(t, fabric.Disconnect(drbdName(vm)))
	}
	require.NoError(t, z.Clusters[env.Primary].StopAPIServer())
	z.waitDRBD(env.DR, "other-vm", "quorum lost", func(r *srv1alpha1.DRBDResource) bool { return !r.Status.Quorum })

	fr := z.waitPhase(z.failover("disaster", env.DR, srv1alpha1.FailoverUnplanned), srv1alpha1.FailoverCompleted)
	require.Equal(t, fullTrail, phases(fr))
	z.assertActive(env.DR)
	z.assertOnReplicaNodes(env.DR)
	other := z.drbd(env.DR, "other-vm")
	require.Equal(t, srv1alpha1.RoleSecondary, other.Spec.Role, "the other group's replica is not promoted")
	require.False(t, other.Spec.ForcePromotion)
	require.Equal(t, "Secondary", other.Status.Role)
	require.False(t, other.Status.Quorum, "DRBD keeps the other group's replica from promotion")
	z.assertLockReleased()
}

func (z *zone) assertActive(cluster string) {
	z.t.Helper()
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(z.t, z.Client(env.Quorum).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: group}, pg))
	require.Equal(z.t, cluster, pg.Spec.ActiveCluster)
	z.waitGroup(cluster, srv1alpha1.StateRunning)
	for _, name := range z.vms {
		vm := &kubevirtv1.VirtualMachine{}
		require.NoError(z.t, z.Client(cluster).Get(z.ctx, types.NamespacedName{Namespace: env.AppNS, Name: name}, vm))
		require.Equal(z.t, kubevirtv1.VirtualMachineStatusRunning, vm.Status.PrintableStatus)
	}
}

// assertOnReplicaNodes checks that each VM of the group runs on a cluster's
// node holding its replica, and that the replicas there are spread over more
// than one node, so a failover does not fit the whole group onto one node.
func (z *zone) assertOnReplicaNodes(cluster string) {
	z.t.Helper()
	nodes := map[string]bool{}
	for _, vm := range z.vms {
		node := z.drbd(cluster, vm).Spec.NodeName
		nodes[node] = true
		require.Equal(z.t, node, z.VMINode(z.t, cluster, vm), "%s runs on the node of its replica on %s", vm, cluster)
	}
	require.Greater(z.t, len(nodes), 1, "the replicas on %s are spread over nodes: %v", cluster, nodes)
}

func (z *zone) assertLockReleased() {
	z.t.Helper()
	env.Eventually(z.t, timeout, "lock released", func() error {
		return leaseGone(z, srv1alpha1.FailoverLockName(group))
	})
}

// TestOneVMZone runs, on one zone of one VM, the flows that need no zone of
// their own: the refused requests first, as they leave the group where it is.
func TestOneVMZone(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 1})
	t.Run("InvalidRequestsSayWhatToFix", func(t *testing.T) { invalidRequestsSayWhatToFix(t, z.in(t)) })
	t.Run("QuorumFollowsRole", func(t *testing.T) { quorumFollowsRole(t, z.in(t)) })
}

// quorumFollowsRole: after a failover the new primary runs without DRBD
// quorum and the new secondary with majority, so a replication-link outage
// costs the secondary its quorum (DRBD then refuses to promote it) while the
// primary's VMs keep writing. Neither node is tainted: the agent taints only
// for a Primary without quorum, and nothing runs from a Secondary.
func quorumFollowsRole(t *testing.T, z *zone) {
	z.waitPhase(z.failover("to-dr", env.DR, srv1alpha1.FailoverPlanned), srv1alpha1.FailoverCompleted)
	vm := z.vms[0]
	require.Equal(t, srv1alpha1.QuorumOff, z.drbd(env.DR, vm).Spec.Quorum.Policy, "the new primary must not lose I/O with the link")
	require.Equal(t, srv1alpha1.QuorumMajority, z.drbd(env.Primary, vm).Spec.Quorum.Policy, "the new secondary is fenced by quorum")

	fabric := z.DRBD(t)
	require.NoError(t, fabric.Disconnect(drbdName(vm)))
	// The agent taints on the DRBD event itself, before the status write
	// this waits for: a taint would show by then.
	z.waitDRBD(env.Primary, vm, "quorum lost", func(r *srv1alpha1.DRBDResource) bool { return !r.Status.Quorum && r.Status.Role == "Secondary" })
	require.False(t, z.isTainted(env.Primary), "a Secondary without quorum does not taint its node")
	require.False(t, z.isTainted(env.DR), "the primary's node keeps scheduling")
	require.NoError(t, fabric.Write(drbdName(vm), env.Nodes[env.DR].Name, 64), "the primary keeps writing while the link is down")

	require.NoError(t, fabric.Connect(drbdName(vm)))
	z.waitDRBD(env.Primary, vm, "quorum back", func(r *srv1alpha1.DRBDResource) bool { return r.Status.Quorum })
}
