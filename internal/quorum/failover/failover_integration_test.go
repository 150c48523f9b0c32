package failover_test

import (
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
// fences the secondary's node (lost-quorum taint) while the primary's VMs keep
// writing; the taint goes when the link returns.
func quorumFollowsRole(t *testing.T, z *zone) {
	z.waitPhase(z.failover("to-dr", env.DR, srv1alpha1.FailoverPlanned), srv1alpha1.FailoverCompleted)
	vm := z.vms[0]
	require.Equal(t, srv1alpha1.QuorumOff, z.drbd(env.DR, vm).Spec.Quorum.Policy, "the new primary must not lose I/O with the link")
	require.Equal(t, srv1alpha1.QuorumMajority, z.drbd(env.Primary, vm).Spec.Quorum.Policy, "the new secondary is fenced by quorum")

	fabric := z.DRBD(t)
	require.NoError(t, fabric.Disconnect(drbdName(vm)))
	env.Eventually(t, timeout, "the new secondary's node tainted", func() error {
		if !z.isTainted(env.Primary) {
			return errPending
		}
		return nil
	})
	require.False(t, z.isTainted(env.DR), "the primary's node keeps scheduling")
	require.NoError(t, fabric.Write(drbdName(vm), env.Nodes[env.DR].Name, 64), "the primary keeps writing while the link is down")

	require.NoError(t, fabric.Connect(drbdName(vm)))
	env.Eventually(t, timeout, "taint cleared once the link is back", func() error {
		if z.isTainted(env.Primary) {
			return errPending
		}
		return nil
	})
}
