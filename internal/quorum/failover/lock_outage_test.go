package failover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestOutageLongerThanLeaseKeepsTheGroupWithItsMover: request "move" demoted
// the source and promoted the target (phase WaitingForDRBD), then
// quorum-manager was down for ten minutes, twice the Lease's duration. A
// second request "back", targeting the source, is reconciled first on restart.
// It must not take the expired Lease: it waits, saying which request holds the
// group and what the operator can do. "move" takes its own Lease back and
// completes; only then does "back" take the Lease and start a real failback
// from where the group now runs. (Before, "back" took the Lease, "move"
// failed with LockLost, and "back" completed as already on its target while
// the group ran nowhere.)
func TestOutageLongerThanLeaseKeepsTheGroupWithItsMover(t *testing.T) {
	f := newFixture(phaseCase{phase: srv1alpha1.FailoverWaitingForDRBD, since: 11 * time.Minute,
		primary: cluster{objs: sourceStoppedSecondary},
		dr:      cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), replica("node-b", pri, pri, true), node("node-b", false)}}})
	move := f.request(t)
	move.Spec.DrainTimeoutSeconds = 3600 // the outage must not end it by its drain budget
	require.NoError(t, f.quorum.Update(f.ctx, move))
	renewed := metav1.NewMicroTime(t0.Add(-10 * time.Minute)) // expired at t0-5m
	require.NoError(t, f.quorum.Create(f.ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: srv1alpha1.FailoverLockName(testGroup)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holderOf(move)), LeaseDurationSeconds: ptr.To(int32(srv1alpha1.FailoverLockTTLSeconds)),
			AcquireTime: &renewed, RenewTime: &renewed, LeaseTransitions: ptr.To(int32(0))},
	}))
	require.NoError(t, f.quorum.Create(f.ctx, &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "back", UID: "uid-back", Generation: 1},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: testGroup},
			TargetCluster: primary, FailoverType: srv1alpha1.FailoverPlanned, DrainTimeoutSeconds: 300, BatchBootTimeoutSeconds: 300},
	}))
	clk := clocktesting.NewFakeClock(t0)
	f.r.Clock = clk
	reconcile := func(name string) *srv1alpha1.FailoverRequest {
		t.Helper()
		f.pgControllers(t)
		_, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testNS, Name: name}})
		require.NoError(t, err)
		f.pgControllers(t)
		fr := &srv1alpha1.FailoverRequest{}
		require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: name}, fr))
		return fr
	}
	holder := func() string {
		l := &coordinationv1.Lease{}
		if err := f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: srv1alpha1.FailoverLockName(testGroup)}, l); err != nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}

	// Restart: "back" is reconciled first and finds the Lease expired.
	back := reconcile("back")
	require.Equal(t, srv1alpha1.FailoverPending, back.Status.Phase, "no takeover from a request that moved the group: %s", back.Status.Message)
	c := meta.FindStatusCondition(back.Status.Conditions, srv1alpha1.ConditionLockAcquired)
	require.NotNil(t, c)
	require.Equal(t, srv1alpha1.ReasonLockHeld, c.Reason)
	require.Equal(t, "group g is held by FailoverRequest move, which already moved it (phase WaitingForDRBD) and has not ended; its Lease expired at "+
		t0.Add(-5*time.Minute).Format(time.RFC3339)+" while quorum-manager was not running, and only move may take it again: it resumes on its own, and this request starts once it ends. "+
		"Follow it with: kubectl siterecovery status g -n dr; delete this request to withdraw it", c.Message)
	require.Equal(t, c.Message, back.Status.Message)
	require.Equal(t, holderOf(move), holder())
	require.Equal(t, stopped, f.groupCopy(t, primary).Spec.DesiredState, "the waiting request wrote nothing")

	// "move" takes its own expired Lease back and goes on.
	move = reconcile("move")
	require.Equal(t, srv1alpha1.FailoverStartingOnTarget, move.Status.Phase, "%s", move.Status.Message)
	require.Equal(t, holderOf(move), holder())

	clk.Step(time.Second)
	back = reconcile("back")
	require.Equal(t, srv1alpha1.FailoverPending, back.Status.Phase)
	require.Contains(t, back.Status.Message, "group g is locked by "+holderOf(move)+" until "+t0.Add(lockTTL).Format(time.RFC3339))

	// The group runs on dr: "move" completes and gives the Lease up.
	g := f.groupCopy(t, drCluster)
	g.Status.CurrentState = running
	require.NoError(t, f.remote.Client(key(drCluster)).Status().Update(f.ctx, g))
	clk.Step(time.Second)
	move = reconcile("move")
	require.Equal(t, srv1alpha1.FailoverCompleted, move.Status.Phase, "%s", move.Status.Message)
	require.Empty(t, holder(), "released")

	// "back" then runs: a failback from dr, where the group now is.
	clk.Step(time.Second)
	back = reconcile("back")
	require.Equal(t, srv1alpha1.FailoverStoppingOnSource, back.Status.Phase, "%s", back.Status.Message)
	require.Equal(t, drCluster, back.Status.SourceCluster)
	require.Equal(t, holderOf(back), holder())
}
