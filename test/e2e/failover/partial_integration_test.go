package failover_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestPlannedFailoverWithDataPathDownFailsSafely: both control planes answer
// but the replication link is down with writes the target never got. A
// planned failover must not promote the target: it waits within
// drainTimeoutSeconds, then fails with the source Primary and running again
// and the out-of-sync bytes in its message.
func TestPlannedFailoverWithDataPathDownFailsSafely(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 1})
	vm := z.vms[0]
	fabric := z.DRBD(t)
	// Protocol A lag, then the link drops: the lag becomes out-of-sync blocks.
	require.NoError(t, fabric.Write(drbdName(vm), env.Nodes[env.Primary].Name, 256))
	require.NoError(t, fabric.Disconnect(drbdName(vm)))

	name := z.failover("link-down", env.DR, srv1alpha1.FailoverPlanned, func(fr *srv1alpha1.FailoverRequest) { fr.Spec.DrainTimeoutSeconds = 12 })
	fr := z.waitPhase(name, srv1alpha1.FailoverFailed)
	require.Equal(t, srv1alpha1.ReasonTargetNotUpToDate, readyReason(fr))
	for _, want := range []string{fmt.Sprintf("%s %d bytes out of sync (disconnected)", drbdName(vm), 256<<10), "drainTimeoutSeconds=12", "nothing was promoted"} {
		require.Contains(t, fr.Status.Message, want)
	}
	r := z.drbd(env.DR, vm)
	require.Equal(t, srv1alpha1.RoleSecondary, r.Spec.Role, "the target was never asked to promote")
	require.Equal(t, "Secondary", r.Status.Role)
	// The source is asked back to Primary with the failure; its agent
	// reports the promotion a moment later.
	env.Eventually(t, timeout, "the source is Primary again", func() error {
		if role := z.drbd(env.Primary, vm).Status.Role; role != "Primary" {
			return fmt.Errorf("role %q", role)
		}
		return nil
	})
	z.assertActive(env.Primary)
	z.waitGroup(env.DR, srv1alpha1.StateStopped)
	z.assertLockReleased()
}

// TestBatchBootTimeoutKeepsGroupOnTarget: VMs that do not run on the target in
// time fail the request, naming them; the group stays on the target, promoted.
func TestBatchBootTimeoutKeepsGroupOnTarget(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 2, drStartDelay: time.Hour})
	name := z.failover("slow-boot", env.DR, srv1alpha1.FailoverPlanned, func(fr *srv1alpha1.FailoverRequest) { fr.Spec.BatchBootTimeoutSeconds = 2 })
	fr := z.waitPhase(name, srv1alpha1.FailoverFailed)
	require.Equal(t, srv1alpha1.ReasonBootTimeout, readyReason(fr))
	for _, vm := range z.vms {
		require.Contains(t, fr.Status.Message, env.AppNS+"/"+vm, "the message names the VMs that do not run")
		require.Equal(t, "Primary", z.drbd(env.DR, vm).Status.Role)
		require.Equal(t, "Secondary", z.drbd(env.Primary, vm).Status.Role)
	}
	require.Contains(t, fr.Status.Message, "the group stays on "+env.DR+", already promoted")
	q := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, z.Client(env.Quorum).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: group}, q))
	require.Equal(t, env.DR, q.Spec.ActiveCluster)
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, z.Client(env.DR).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: group}, pg))
	require.Equal(t, srv1alpha1.StateRunning, pg.Spec.DesiredState, "the target keeps trying to start them")
	z.waitGroup(env.Primary, srv1alpha1.StateStopped)
	z.assertLockReleased()
}

// TestForceRemovesTaintBesideAnotherGroup: another group runs on the target's
// node, whose own replica, Primary there, lost quorum and tainted it. With force the request
// removes the taint, promotes and starts its group; the other group keeps running.
func TestForceRemovesTaintBesideAnotherGroup(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 1})
	z.runOtherGroupOnTaintedDRNode()
	name := z.failover("forced", env.DR, srv1alpha1.FailoverPlanned, func(fr *srv1alpha1.FailoverRequest) { fr.Spec.Force = true })
	fr := z.waitPhase(name, srv1alpha1.FailoverCompleted)
	require.Equal(t, fullTrail, phases(fr))
	env.Eventually(t, timeout, "a TaintRemoved event for "+name, func() error {
		evs := &corev1.EventList{}
		if err := z.Client(env.Quorum).List(z.ctx, evs, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "TaintRemoved" && e.InvolvedObject.Name == name {
				return nil
			}
		}
		return errPending
	})
	z.assertActive(env.DR)
	other := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, z.Client(env.DR).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: "other"}, other))
	require.Equal(t, srv1alpha1.StateRunning, other.Status.CurrentState, "the other group keeps running")
	require.Equal(t, srv1alpha1.StateRunning, other.Spec.DesiredState)
	z.assertLockReleased()
}

// runOtherGroupOnTaintedDRNode runs a second group of the namespace on the DR
// cluster, with a replica of its own, Primary there, whose lost quorum taints
// the shared node: the taint the agent keeps for a group in use there.
func (z *zone) runOtherGroupOnTaintedDRNode() {
	t := z.t
	z.CreateReplica(t, env.Primary, env.DRBDReplica("other", "other-vm", env.Primary, env.DR, 0, 7900))
	z.CreateReplica(t, env.DR, env.DRBDReplica("other", "other-vm", env.DR, env.Primary, 1, 7900))
	z.waitDRBD(env.DR, "other-vm", "connected", func(r *srv1alpha1.DRBDResource) bool { return r.Status.MetadataCreated && len(r.Status.Peers) == 1 })
	require.NoError(t, z.DRBD(t).MarkUpToDate(drbdName("other-vm"), env.Nodes[env.DR].Name))
	z.setPrimary(env.DR, "other-vm")
	z.waitDRBD(env.DR, "other-vm", "Primary", func(r *srv1alpha1.DRBDResource) bool { return r.Status.Role == "Primary" })
	require.NoError(t, z.DRBD(t).Disconnect(drbdName("other-vm")))
	env.Eventually(t, timeout, "DR node tainted by its agent", func() error {
		if !z.isTainted(env.DR) {
			return errPending
		}
		return nil
	})
	z.create(env.DR, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "other"},
		Spec:       srv1alpha1.ProtectionGroupSpec{DesiredState: srv1alpha1.StateRunning},
	})
	env.Eventually(t, timeout, "other group running", func() error {
		pg := &srv1alpha1.ProtectionGroup{}
		if err := z.Client(env.DR).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: "other"}, pg); err != nil {
			return err
		}
		if pg.Status.CurrentState != srv1alpha1.StateRunning {
			return errPending
		}
		return nil
	})
}
