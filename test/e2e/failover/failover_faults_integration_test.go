package failover_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestUnplannedFailoverWithPrimaryDown runs with minted kubeconfigs, as in
// production (see TestPlannedFailoverAndFailback).
func TestUnplannedFailoverWithPrimaryDown(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 2, minted: true})
	// The primary site fails: its API server and its replication links are gone.
	for _, vm := range z.vms {
		require.NoError(t, z.DRBD(t).Disconnect(drbdName(vm)))
	}
	require.NoError(t, z.Clusters[env.Primary].StopAPIServer())

	fr := z.waitPhase(z.failover("disaster", env.DR, srv1alpha1.FailoverUnplanned), srv1alpha1.FailoverCompleted)
	require.Equal(t, fullTrail, phases(fr))
	risk := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionDataLossRisk)
	require.NotNil(t, risk, "an unplanned failover records that writes may be lost")
	require.Equal(t, metav1.ConditionTrue, risk.Status)
	require.Contains(t, risk.Message, "protocol A")
	src := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionSourceStopped)
	require.Equal(t, metav1.ConditionUnknown, src.Status, "nobody confirmed the source stopped")
	z.assertActive(env.DR)
	for _, vm := range z.vms {
		require.Equal(t, "Primary", z.drbd(env.DR, vm).Status.Role)
	}
	// The step that starts the VMs ends the forced promotion's intent: no
	// force is allowed from then on, and the primaries have their role's quorum.
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, z.Client(env.DR).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, pg))
	q := srv1alpha1.QuorumForRole(srv1alpha1.RolePrimary)
	require.Equal(t, &srv1alpha1.GroupDRBDIntent{Role: srv1alpha1.RolePrimary, Quorum: &q}, pg.Spec.DRBD)
	z.assertLockReleased()
}

func TestConcurrentRequestsForOneGroupRunOneAtATime(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 2, vmStopDelay: 300 * time.Millisecond, vmStartDelay: 300 * time.Millisecond})
	rec := z.recordVMIs()
	first := z.failover("first", env.DR, srv1alpha1.FailoverPlanned)
	second := z.failover("second", env.DR, srv1alpha1.FailoverPlanned)

	// Sample both requests until both finish: at no moment may both be working.
	working := func(fr *srv1alpha1.FailoverRequest) bool {
		return fr.Status.Phase != "" && fr.Status.Phase != srv1alpha1.FailoverPending &&
			fr.Status.Phase != srv1alpha1.FailoverCompleted && fr.Status.Phase != srv1alpha1.FailoverFailed
	}
	sawWaiting := false
	env.Eventually(t, timeout, "both requests finished", func() error {
		a, b := z.request(first), z.request(second)
		require.False(t, working(a) && working(b), "both requests work on the group at once: %s and %s", a.Status.Phase, b.Status.Phase)
		for _, fr := range []*srv1alpha1.FailoverRequest{a, b} {
			if c := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionLockAcquired); c != nil && c.Reason == srv1alpha1.ReasonLockHeld {
				sawWaiting = true
			}
		}
		if a.Status.CompletionTime == nil || b.Status.CompletionTime == nil {
			return errPending
		}
		return nil
	})
	require.True(t, sawWaiting, "the later request waited for the lock")
	a, b := z.request(first), z.request(second)
	reasons := []string{readyReason(a), readyReason(b)}
	require.ElementsMatch(t, []string{"FailoverCompleted", srv1alpha1.ReasonAlreadyOnTarget}, reasons,
		"one request fails the group over, the other finds it on its target and completes as a no-op")
	require.Equal(t, srv1alpha1.FailoverCompleted, a.Status.Phase)
	require.Equal(t, srv1alpha1.FailoverCompleted, b.Status.Phase)
	z.assertActive(env.DR)
	z.assertLockReleased()
	require.Empty(t, rec.Overlaps())
}

func TestQuorumManagerRestartedInEachPhase(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 2, vmStopDelay: 2 * time.Second, vmStartDelay: 2 * time.Second})
	rec := z.recordVMIs()
	// Hold the request in WaitingForDRBD deterministically: another group of the
	// namespace runs on the DR cluster, and a replica of its own, Primary there,
	// that lost quorum makes the agent taint the shared node.
	z.runOtherGroupOnTaintedDRNode()

	name := z.failover("restarted", env.DR, srv1alpha1.FailoverPlanned)
	restart := func() {
		z.quorum.Stop(t)
		z.quorum = z.StartQuorum(t, setup.QuorumOptions{ProbeInterval: time.Second})
	}
	z.waitPhase(name, srv1alpha1.FailoverStoppingOnSource)
	restart()
	fr := z.waitPhase(name, srv1alpha1.FailoverWaitingForDRBD)
	env.Eventually(t, timeout, "held by the taint check", func() error {
		fr = z.request(name)
		if c := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionTargetPromoted); c == nil || c.Reason != srv1alpha1.ReasonTaintConflict {
			return errPending
		}
		return nil
	})
	// The hold names the taint, the node and the group it is kept for.
	for _, want := range []string{srv1alpha1.LostQuorumTaintKey, env.Nodes[env.DR].Name, "group other", drbdName("other-vm")} {
		require.Contains(t, fr.Status.Message, want)
	}
	require.True(t, z.isTainted(env.DR), "the taint another group depends on stays")
	restart()
	// The conflict clears: the other group's replica has quorum again, and
	// its agent lifts the taint.
	require.NoError(t, z.DRBD(t).Connect(drbdName("other-vm")))

	z.waitPhase(name, srv1alpha1.FailoverStartingOnTarget)
	restart()
	fr = z.waitPhase(name, srv1alpha1.FailoverCompleted)
	require.Equal(t, fullTrail, phases(fr), "each phase entered exactly once despite three restarts")
	z.assertActive(env.DR)
	z.assertLockReleased()
	require.Empty(t, rec.Overlaps())
}

func TestDrainTimeoutFailsSafely(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 2, vmStopDelay: time.Hour})
	name := z.failover("slow-drain", env.DR, srv1alpha1.FailoverPlanned, func(fr *srv1alpha1.FailoverRequest) {
		fr.Spec.DrainTimeoutSeconds = 1
	})
	fr := z.waitPhase(name, srv1alpha1.FailoverFailed)
	require.Equal(t, srv1alpha1.ReasonDrainTimeout, readyReason(fr))
	require.Contains(t, fr.Status.Message, "drainTimeoutSeconds=1")
	require.Contains(t, fr.Status.Message, "nothing was promoted")
	// Nothing half-promoted: the target is still Secondary and stopped, the source
	// still Primary and asked to run again.
	for _, vm := range z.vms {
		r := z.drbd(env.DR, vm)
		require.Equal(t, srv1alpha1.RoleSecondary, r.Spec.Role)
		require.Equal(t, "Secondary", r.Status.Role)
		require.Equal(t, "Primary", z.drbd(env.Primary, vm).Status.Role)
	}
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, z.Client(env.Primary).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: group}, pg))
	require.Equal(t, srv1alpha1.StateRunning, pg.Spec.DesiredState)
	z.waitGroup(env.DR, srv1alpha1.StateStopped)
	q := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, z.Client(env.Quorum).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: group}, q))
	require.Equal(t, env.Primary, q.Spec.ActiveCluster)
	z.assertLockReleased()
}

// invalidRequestsSayWhatToFix: a request for a cluster, group or namespace that
// does not fit fails with a reason and a message that names what to fix, and
// one for the cluster the group runs on completes with nothing moved.
func invalidRequestsSayWhatToFix(t *testing.T, z *zone) {
	for _, tc := range []struct {
		name, target, group, namespace string
		phase                          srv1alpha1.FailoverPhase
		reason, message                string
	}{
		{"unknown-target", "mars", group, "", srv1alpha1.FailoverFailed, srv1alpha1.ReasonInvalidTarget, `"mars" is not a cluster of zone production`},
		{"unknown-group", env.DR, "nope", "", srv1alpha1.FailoverFailed, srv1alpha1.ReasonGroupNotFound, "ProtectionGroup dr-production/nope not found"},
		{"other-namespace", env.DR, group, "dr-other", srv1alpha1.FailoverFailed, srv1alpha1.ReasonInvalidSpec, "must be the request's namespace"},
		{"already-there", env.Primary, group, "", srv1alpha1.FailoverCompleted, srv1alpha1.ReasonAlreadyOnTarget, "already runs on primary-cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := z.in(t)
			name := z.failover(tc.name, tc.target, srv1alpha1.FailoverPlanned, func(fr *srv1alpha1.FailoverRequest) {
				fr.Spec.ProtectionGroupRef = srv1alpha1.ProtectionGroupReference{Name: tc.group, Namespace: tc.namespace}
			})
			fr := z.waitPhase(name, tc.phase)
			require.Equal(t, tc.reason, readyReason(fr))
			require.Contains(t, fr.Status.Message, tc.message)
		})
	}
	z.assertActive(env.Primary)
}

type pendingError struct{}

func (pendingError) Error() string { return "not yet" }

var errPending error = pendingError{}

func (z *zone) isTainted(cluster string) bool {
	z.t.Helper()
	node := &corev1.Node{}
	require.NoError(z.t, z.Client(cluster).Get(context.Background(), types.NamespacedName{Name: env.Nodes[cluster].Name}, node))
	for _, t := range node.Spec.Taints {
		if t.Key == srv1alpha1.LostQuorumTaintKey {
			return true
		}
	}
	return false
}
