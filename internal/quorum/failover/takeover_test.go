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

// TestLeaseTakeoverOnlyAfterExpiry: a quorum-manager died while its request
// "stuck" held the group's Lease, just after taking it and before it acted on
// the group (still Pending). Another request of the group, run by a
// quorum-manager whose clock the test drives, waits until the Lease expires —
// not one second less — then takes the Lease over; the stuck request, resumed
// later, finds the Lease taken and waits behind it instead of driving the
// group beside it. (A holder that already moved the group keeps it:
// TestOutageLongerThanLeaseKeepsTheGroupWithItsMover.)
func TestLeaseTakeoverOnlyAfterExpiry(t *testing.T) {
	f := newFixture(phaseCase{phase: srv1alpha1.FailoverPending,
		primary: cluster{objs: sourceRunning}, dr: cluster{objs: targetStoppedPromotable}})
	renewed := t0.Add(-lockTTL + 30*time.Second) // the Lease expires at t0+30s
	stuck := &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "stuck", UID: "uid-stuck", Generation: 1},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: testGroup},
			TargetCluster: drCluster, FailoverType: srv1alpha1.FailoverPlanned, DrainTimeoutSeconds: 3600, BatchBootTimeoutSeconds: 300},
		Status: srv1alpha1.FailoverRequestStatus{Phase: srv1alpha1.FailoverPending,
			PhaseHistory: []srv1alpha1.PhaseTransition{
				{Phase: string(srv1alpha1.FailoverPending), Time: metav1.NewMicroTime(renewed)},
			}},
	}
	require.NoError(t, f.quorum.Create(f.ctx, stuck))
	require.NoError(t, f.quorum.Status().Update(f.ctx, stuck))
	rt := metav1.NewMicroTime(renewed)
	require.NoError(t, f.quorum.Create(f.ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: srv1alpha1.FailoverLockName(testGroup)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holderOf(stuck)), LeaseDurationSeconds: ptr.To(int32(srv1alpha1.FailoverLockTTLSeconds)),
			AcquireTime: &rt, RenewTime: &rt, LeaseTransitions: ptr.To(int32(0))},
	}))
	clk := clocktesting.NewFakeClock(t0)
	f.r.Clock = clk
	reconcile := func(name string) *srv1alpha1.FailoverRequest {
		t.Helper()
		_, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testNS, Name: name}})
		require.NoError(t, err)
		fr := &srv1alpha1.FailoverRequest{}
		require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: name}, fr))
		return fr
	}
	lease := func() *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: srv1alpha1.FailoverLockName(testGroup)}, l))
		return l
	}

	for _, at := range []time.Duration{0, 29 * time.Second} {
		clk.SetTime(t0.Add(at))
		fr := reconcile("move")
		require.Equal(t, srv1alpha1.FailoverPending, fr.Status.Phase, "no takeover %s before the Lease expires", 30*time.Second-at)
		c := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionLockAcquired)
		require.Equal(t, srv1alpha1.ReasonLockHeld, c.Reason)
		require.Contains(t, c.Message, "locked by "+holderOf(stuck)+" until "+t0.Add(30*time.Second).Format(time.RFC3339))
		require.Equal(t, holderOf(stuck), *lease().Spec.HolderIdentity)
	}

	clk.SetTime(t0.Add(31 * time.Second))
	fr := reconcile("move")
	require.Equal(t, srv1alpha1.FailoverStoppingOnSource, fr.Status.Phase, "taken over once expired: %s", fr.Status.Message)
	l := lease()
	require.Equal(t, holderOf(fr), *l.Spec.HolderIdentity)
	require.Equal(t, int32(1), *l.Spec.LeaseTransitions)

	// The stuck request's manager comes back: it must not drive the group too.
	clk.SetTime(t0.Add(32 * time.Second))
	old := reconcile("stuck")
	require.Equal(t, srv1alpha1.FailoverPending, old.Status.Phase, "it waits behind the new holder: %s", old.Status.Message)
	c := meta.FindStatusCondition(old.Status.Conditions, srv1alpha1.ConditionLockAcquired)
	require.Equal(t, srv1alpha1.ReasonLockHeld, c.Reason)
	require.Contains(t, c.Message, "locked by "+holderOf(fr))
	require.Equal(t, holderOf(fr), *lease().Spec.HolderIdentity, "the new holder keeps the Lease")
}

func readyReasonOf(fr *srv1alpha1.FailoverRequest) string {
	if c := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}
