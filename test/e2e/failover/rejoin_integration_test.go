package failover_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// annotate sets an annotation on a request as kubectl annotate would.
func (z *zone) annotate(name, key, value string) {
	z.t.Helper()
	fr := z.request(name)
	before := fr.DeepCopy()
	if fr.Annotations == nil {
		fr.Annotations = map[string]string{}
	}
	fr.Annotations[key] = value
	require.NoError(z.t, z.Client(env.Quorum).Patch(z.ctx, fr, client.MergeFrom(before), client.FieldOwner("kubectl-annotate")))
}

// TestFailbackAfterFencedFailover: after an unplanned failover that fenced the
// primary off (its API server was down, its DRBD Primary and connected), the
// primary comes back with diverged data. A planned failback stops the group
// there, holds until the operator confirms the diverged writes may go, then
// discards them, reconnects and resyncs the primary from the DR cluster while
// the group keeps running there, and only then fails back as planned.
func TestFailbackAfterFencedFailover(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 2})
	primaries := z.DRBD(t).WatchPrimaries(t)
	fencedFailoverThatDiverged(t, z)
	z.unplannedBackHolds("back-unplanned")
	require.NoError(t, z.Clusters[env.Primary].StartAPIServer())
	z.waitStoodDown()

	z.failbackRejoins("back")
	require.Empty(t, primaries.Violations(), "two DRBD Primaries were connected")
}

// TestFailbackAfterFencedOffRecordRemoved: the operator removes the group's
// fenced-off record once the returned primary has stood down, with both
// clusters up. The stand-down ends and nothing more is asked of either
// cluster: the group stays stopped on the primary and the DR replicas keep it
// fenced off. The record is not what keeps the diverged data apart, the DR
// replicas' fencing is: a later planned failback still rejoins the primary
// first, holding for the operator's confirmation to discard its writes.
func TestFailbackAfterFencedOffRecordRemoved(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 2})
	primaries := z.DRBD(t).WatchPrimaries(t)
	fencedFailoverThatDiverged(t, z)
	require.NoError(t, z.Clusters[env.Primary].StartAPIServer())
	z.waitStoodDown()

	pg := z.quorumGroup()
	before := pg.DeepCopy()
	delete(pg.Annotations, srv1alpha1.FencedOffAnnotation)
	require.NoError(t, z.Client(env.Quorum).Patch(z.ctx, pg, client.MergeFrom(before), client.FieldOwner("kubectl-annotate")))
	env.Eventually(t, timeout, "the StoodDown condition gone with the record", func() error {
		if c := meta.FindStatusCondition(z.quorumGroup().Status.Conditions, srv1alpha1.ConditionStoodDown); c != nil {
			return fmt.Errorf("still %s: %s", c.Reason, c.Message)
		}
		return nil
	})
	// Nothing was undone on either cluster.
	z.waitGroup(env.Primary, srv1alpha1.StateStopped)
	z.assertActive(env.DR)
	for _, vm := range z.vms {
		require.Equal(t, string(srv1alpha1.RoleSecondary), z.drbd(env.Primary, vm).Status.Role, "the stood-down replica stays Secondary")
		require.Equal(t, []string{env.Nodes[env.Primary].Name}, z.drbd(env.DR, vm).Spec.FencedPeers, "the DR replica keeps the primary fenced off")
	}

	z.failbackRejoins("back")
	require.Empty(t, primaries.Violations(), "two DRBD Primaries were connected")
}

// TestPartitionedPrimaryIsStoodDownOnReturn: the primary site is cut off (its
// API server and its replication links) while it keeps running, and the group
// fails over unplanned. DRBD on the DR cluster did not replicate from the
// primary at that moment, so the request fences it off before promoting, with
// no operator step: the primary may go on writing. Both sides write while
// apart. When the site returns, DRBD never connects the diverged copies (no
// split brain, no resync either way, never two Primaries connected), the
// group is stopped there and its replicas demoted, and a planned failback
// rejoins it only on the operator's confirmation.
func TestPartitionedPrimaryIsStoodDownOnReturn(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 2, latency: true})
	primaries := z.DRBD(t).WatchPrimaries(t)
	z.primaryWithoutQuorum()
	// The partition: quorum-manager and the DR cluster lose the primary, whose
	// own controllers, agent and VMs run on.
	require.NoError(t, z.DRBD(t).CutLinks())
	z.Partition(t, env.Primary, true)

	fr := z.waitPhase(z.failover("partition", env.DR, srv1alpha1.FailoverUnplanned), srv1alpha1.FailoverCompleted)
	require.Equal(t, env.Primary, z.groupAnnotation(srv1alpha1.FencedOffAnnotation), "the group records the primary as fenced off")
	require.Contains(t, fr.Status.Message, srv1alpha1.DiscardDivergedAnnotation+"="+group, "the request says how to fail back")
	for _, vm := range z.vms {
		require.Equal(t, []string{env.Nodes[env.Primary].Name}, z.drbd(env.DR, vm).Spec.FencedPeers, "the DR replica fenced the primary off")
		// The cut-off primary still runs and writes; so does the DR cluster.
		require.NoError(t, z.DRBD(t).Write(drbdName(vm), env.Nodes[env.Primary].Name, 64))
		require.NoError(t, z.DRBD(t).Write(drbdName(vm), env.Nodes[env.DR].Name, 256))
	}

	require.Equal(t, string(srv1alpha1.RolePrimary), z.drbd(env.Primary, z.vms[0]).Status.Role, "the cut-off primary ran on, Primary")
	require.NoError(t, z.DRBD(t).RestoreLinks())
	z.Partition(t, env.Primary, false)
	// The returned primary is stopped and demoted, what it wrote while cut
	// off is reported, then discarded, and it resyncs from the DR cluster.
	z.waitGroup(env.Primary, srv1alpha1.StateStopped)
	var report string
	env.Eventually(t, timeout, "the primary rejoined: Diverged=False/"+srv1alpha1.ReasonDivergedDiscarded, func() error {
		pg := z.quorumGroup()
		c := meta.FindStatusCondition(pg.Status.Conditions, srv1alpha1.ConditionDiverged)
		if c == nil || c.Reason != srv1alpha1.ReasonDivergedDiscarded {
			return fmt.Errorf("Diverged is %v", c)
		}
		if pg.Annotations[srv1alpha1.FencedOffAnnotation] != "" {
			return errors.New("the fenced-off record is still there")
		}
		report = c.Message
		return nil
	})
	// How much: what DRBD on the returned side counted out of sync. (The
	// simulator's volumes here carry counters, not contents: it counts the
	// pair's blocks, both sides' writes, where DRBD counts the node's own.)
	require.Contains(t, report, "primary-cluster rejoined")
	require.Regexp(t, `out of sync \(apps/vm-00 [1-9][0-9]*Ki, apps/vm-01 [1-9][0-9]*Ki\)`, report, "the outcome says how much diverged on which VMs")
	// Events go through client-go's asynchronous broadcaster: nothing orders
	// the Event's write before the condition's.
	env.Eventually(t, timeout, "a Warning event reported the divergence", func() error {
		if !z.hasEvent(group, corev1.EventTypeWarning, srv1alpha1.ConditionDiverged) {
			return errors.New("no Warning event with reason " + srv1alpha1.ConditionDiverged)
		}
		return nil
	})
	for _, vm := range z.vms {
		z.waitDRBD(env.Primary, vm, "Secondary, connected and UpToDate", func(r *srv1alpha1.DRBDResource) bool {
			return r.Status.Role == "Secondary" && len(r.Status.Peers) == 1 && r.Status.Peers[0].ConnectionState == "Connected" &&
				len(r.Status.Volumes) == 1 && r.Status.Volumes[0].DiskState == "UpToDate"
		})
		d := z.drbd(env.DR, vm)
		require.Equal(t, "Primary", d.Status.Role, "the DR cluster kept running the group")
		require.Empty(t, d.Spec.FencedPeers, "and let the primary back in")
	}
	z.assertActive(env.DR)

	// Protected again: a planned failback needs no confirmation.
	fr = z.waitPhase(z.failover("back", env.Primary, srv1alpha1.FailoverPlanned), srv1alpha1.FailoverCompleted)
	require.Nil(t, meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionTargetRejoined), "nothing was left to rejoin")
	z.assertActive(env.Primary)
	require.Empty(t, primaries.Violations(), "two DRBD Primaries were connected")
}

// hasEvent reports whether an event of type and reason was recorded for the
// named object in the DR namespace.
func (z *zone) hasEvent(name, typ, reason string) bool {
	z.t.Helper()
	list := &corev1.EventList{}
	require.NoError(z.t, z.Client(env.Quorum).List(z.ctx, list, client.InNamespace(env.Namespace)))
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Type == typ && e.Reason == reason {
			return true
		}
	}
	return false
}

// holdDiverged annotates the group so that a returned fenced-off cluster
// keeps its diverged writes, as an operator who wants to save them does.
func (z *zone) holdDiverged() {
	z.t.Helper()
	pg := z.quorumGroup()
	before := pg.DeepCopy()
	if pg.Annotations == nil {
		pg.Annotations = map[string]string{}
	}
	pg.Annotations[srv1alpha1.HoldDivergedAnnotation] = "true"
	require.NoError(z.t, z.Client(env.Quorum).Patch(z.ctx, pg, client.MergeFrom(before), client.FieldOwner("kubectl-annotate")))
}

// fencedFailoverThatDiverged fails the group over to the DR cluster unplanned,
// with the primary's API server down and the source fenced off on the
// operator's confirmation, then writes on both sides: the primary's lag
// under protocol A, and the DR cluster's writes while cut off.
func fencedFailoverThatDiverged(t *testing.T, z *zone) {
	t.Helper()
	for _, vm := range z.vms {
		require.NoError(t, z.DRBD(t).Write(drbdName(vm), env.Nodes[env.Primary].Name, 64))
	}
	holdForFencing(t, z, "fence-primary")
	z.annotate("fence-primary", srv1alpha1.SourceFencedAnnotation, group)
	fr := z.waitPhase("fence-primary", srv1alpha1.FailoverCompleted)
	require.Contains(t, fr.Status.Message, srv1alpha1.DiscardDivergedAnnotation+"="+group, "the fenced failover says how to fail back")
	require.Equal(t, env.Primary, z.groupAnnotation(srv1alpha1.FencedOffAnnotation), "the group records the primary as fenced off")
	for _, vm := range z.vms {
		require.NoError(t, z.DRBD(t).Write(drbdName(vm), env.Nodes[env.DR].Name, 256))
	}
	// The operator keeps the primary's diverged writes for the failback's
	// confirmation, rather than letting them be discarded on its return.
	z.holdDiverged()
}

// failbackRejoins runs a planned failback to the returned primary: it holds
// for the discard confirmation, then rejoins, resyncs and fails back.
func (z *zone) failbackRejoins(name string) {
	t := z.t
	t.Helper()
	z.failover(name, env.Primary, srv1alpha1.FailoverPlanned)
	var fr *srv1alpha1.FailoverRequest
	var held *metav1.Condition
	env.Eventually(t, timeout, name+" held for the discard confirmation", func() error {
		fr = z.request(name)
		held = meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionTargetRejoined)
		if held == nil || held.Reason != srv1alpha1.ReasonTargetDiverged {
			return fmt.Errorf("phase %s: %s", fr.Status.Phase, fr.Status.Message)
		}
		return nil
	})
	require.Equal(t, srv1alpha1.FailoverPending, fr.Status.Phase, "nothing moved yet")
	require.Equal(t, srv1alpha1.ReasonTargetDiverged, readyReason(fr), "the wait names what it waits for")
	for _, want := range []string{"diverged", "discards the writes made on " + env.Primary, srv1alpha1.DiscardDivergedAnnotation + "=" + group, "delete this request"} {
		require.Contains(t, held.Message, want)
	}
	// The stale copy of the group stopped on the returned primary, the group
	// runs on the DR cluster, and the primary stays fenced off until confirmed.
	z.waitGroup(env.Primary, srv1alpha1.StateStopped)
	z.waitGroup(env.DR, srv1alpha1.StateRunning)
	for _, vm := range z.vms {
		require.Equal(t, []string{env.Nodes[env.Primary].Name}, z.drbd(env.DR, vm).Spec.FencedPeers)
		require.Empty(t, z.drbd(env.Primary, vm).Status.DataDiscarded)
	}

	z.annotate(name, srv1alpha1.DiscardDivergedAnnotation, group)
	fr = z.waitPhase(name, srv1alpha1.FailoverCompleted)
	rejoined := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionTargetRejoined)
	require.Equal(t, metav1.ConditionTrue, rejoined.Status)
	require.Equal(t, []string{"Pending", "StoppingOnSource", "WaitingForDRBD", "StartingOnTarget", "Completed"}, phases(fr))
	z.assertActive(env.Primary)
	z.waitGroup(env.DR, srv1alpha1.StateStopped)
	for _, vm := range z.vms {
		p, d := z.drbd(env.Primary, vm), z.drbd(env.DR, vm)
		require.Equal(t, string(fr.UID), p.Status.DataDiscarded, "the primary's diverged data was discarded")
		require.Empty(t, p.Spec.DiscardData, "and the ask cleared")
		require.Empty(t, d.Spec.FencedPeers, "the DR replica let the primary back in")
		require.False(t, p.Spec.ForcePromotion, "the failback promoted a resynced replica, without force")
		z.waitDRBD(env.DR, vm, "Secondary and connected", func(r *srv1alpha1.DRBDResource) bool {
			return r.Status.Role == "Secondary" && len(r.Status.Peers) == 1 && r.Status.Peers[0].ConnectionState == "Connected"
		})
		require.Equal(t, "Primary", z.drbd(env.Primary, vm).Status.Role)
	}
	require.Empty(t, z.groupAnnotation(srv1alpha1.FencedOffAnnotation), "the rejoined primary is no longer recorded as fenced off")
	env.Eventually(t, timeout, "no StoodDown condition after the failback", func() error {
		if c := meta.FindStatusCondition(z.quorumGroup().Status.Conditions, srv1alpha1.ConditionStoodDown); c != nil {
			return fmt.Errorf("still %s: %s", c.Reason, c.Message)
		}
		return nil
	})
	z.assertLockReleased()
}

// unplannedBackHolds: an unplanned request back to the fenced-off primary
// would run the group on the data the primary had when it was cut off. It
// holds, changes nothing, says why and the ways on, and goes when deleted.
func (z *zone) unplannedBackHolds(name string) {
	t := z.t
	t.Helper()
	z.failover(name, env.Primary, srv1alpha1.FailoverUnplanned)
	var fr *srv1alpha1.FailoverRequest
	var held *metav1.Condition
	env.Eventually(t, timeout, name+" held: its target is fenced off", func() error {
		fr = z.request(name)
		held = meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionTargetRejoined)
		if held == nil || held.Reason != srv1alpha1.ReasonTargetFencedOff {
			return fmt.Errorf("phase %s: %s", fr.Status.Phase, fr.Status.Message)
		}
		return nil
	})
	require.Equal(t, srv1alpha1.FailoverPending, fr.Status.Phase, "nothing moved")
	require.Equal(t, srv1alpha1.ReasonTargetFencedOff, readyReason(fr), "the wait names what it waits for")
	for _, want := range []string{
		"fenced off", "lose them", // why
		srv1alpha1.DiscardDivergedAnnotation + "=" + group, "delete this request", // way one
		srv1alpha1.FencedOffAnnotation + "-", // way two
	} {
		require.Contains(t, held.Message, want)
	}
	z.assertActive(env.DR)
	for _, vm := range z.vms {
		d := z.drbd(env.DR, vm)
		require.Equal(t, srv1alpha1.RolePrimary, d.Spec.Role, "the DR replica stays Primary")
		require.Equal(t, []string{env.Nodes[env.Primary].Name}, d.Spec.FencedPeers, "and keeps the primary fenced off")
	}
	require.NoError(t, z.Client(env.Quorum).Delete(z.ctx, fr))
	z.waitGone(name)
	z.assertLockReleased()
}

// quorumGroup reads the quorum copy of the group.
func (z *zone) quorumGroup() *srv1alpha1.ProtectionGroup {
	z.t.Helper()
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(z.t, z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, pg))
	return pg
}

// groupAnnotation reads an annotation of the quorum copy of the group.
func (z *zone) groupAnnotation(key string) string {
	z.t.Helper()
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(z.t, z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, pg))
	return pg.Annotations[key]
}

// waitStoodDown: once the fenced-off primary answers again, with no request,
// the group is stopped there and its replicas demoted, while the DR replicas
// keep it fenced off, and an event on the group says so.
func (z *zone) waitStoodDown() {
	t := z.t
	t.Helper()
	z.waitGroup(env.Primary, srv1alpha1.StateStopped)
	for _, vm := range z.vms {
		z.waitDRBD(env.Primary, vm, "Secondary", func(r *srv1alpha1.DRBDResource) bool {
			return r.Status.Role == string(srv1alpha1.RoleSecondary)
		})
		require.Equal(t, []string{env.Nodes[env.Primary].Name}, z.drbd(env.DR, vm).Spec.FencedPeers, "the DR replica keeps the primary fenced off")
	}
	env.Eventually(t, timeout, "StoodDown=True on the group", func() error {
		c := meta.FindStatusCondition(z.quorumGroup().Status.Conditions, srv1alpha1.ConditionStoodDown)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("StoodDown is %v", c)
		}
		if !strings.Contains(c.Message, srv1alpha1.DiscardDivergedAnnotation+"="+group) {
			return fmt.Errorf("the condition does not give the way back: %s", c.Message)
		}
		return nil
	})
	env.Eventually(t, timeout, "a StoodDown event on the group", func() error {
		list := &corev1.EventList{}
		if err := z.Client(env.Quorum).List(z.ctx, list, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == group && e.Reason == srv1alpha1.ReasonStoodDown && e.Type == corev1.EventTypeNormal {
				return nil
			}
		}
		return errPending
	})
	z.assertActive(env.DR)
}
