package failover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestSilentAgentWakesAtHeartbeatExpiry: a planned request waits for the
// target to become promotable, a wait nothing but DRBD events ends. Its
// reconcile asks to run again just after the target agent's heartbeat would
// expire, and no sooner holds for it; past the expiry and its grace it holds
// with AgentSilent, naming the node.
func TestSilentAgentWakesAtHeartbeatExpiry(t *testing.T) {
	f, heartbeat := waitingOnRenewingAgent()
	renewed := heartbeat.Spec.RenewTime.Time
	clk := clocktesting.NewFakeClock(t0)
	f.r.Clock = clk
	f.r.Elapsed = clk
	reconcile := func() ctrl.Result {
		t.Helper()
		res, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testNS, Name: "move"}})
		require.NoError(t, err)
		return res
	}

	wake := renewed.Add(4*time.Second + heartbeatGrace + time.Second/4)
	require.Equal(t, wake.Sub(t0), reconcile().RequeueAfter, "looks again just after the heartbeat would expire")
	require.NotEqual(t, ReasonAgentSilent, readyReasonOf(f.request(t)))

	clk.SetTime(renewed.Add(4*time.Second + heartbeatGrace)) // expired, within the grace
	reconcile()
	require.NotEqual(t, ReasonAgentSilent, readyReasonOf(f.request(t)), "a skew within the grace is not a silent agent")

	clk.SetTime(wake)
	reconcile()
	fr := f.request(t)
	require.Equal(t, ReasonAgentSilent, readyReasonOf(fr))
	require.Contains(t, fr.Status.Message, "drbd-node-agent of node node-b on "+drCluster)
}

// TestJumpedClockDoesNotSilenceRenewingAgent: quorum-manager's wall clock
// jumps 90 s forward while the target's agent keeps renewing its heartbeat on
// its own clock. The request does not hold for a silent agent, because a Lease
// is judged by whether it changes over quorum-manager's elapsed time, not by
// how old its renewTime looks. Once the agent stops renewing, the same request
// holds with AgentSilent after the Lease's duration and grace have elapsed.
func TestJumpedClockDoesNotSilenceRenewingAgent(t *testing.T) {
	f, heartbeat := waitingOnRenewingAgent()
	wall, elapsed := clocktesting.NewFakeClock(t0), clocktesting.NewFakeClock(t0)
	f.r.Clock, f.r.Elapsed = wall, elapsed
	reconcile := func() {
		t.Helper()
		_, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testNS, Name: "move"}})
		require.NoError(t, err)
	}
	rc, err := f.remote.Get(key(drCluster))
	require.NoError(t, err)
	dr := rc.Direct
	step := func(d time.Duration) {
		wall.Step(d)
		elapsed.Step(d)
	}
	renew := func(at time.Time) {
		t.Helper()
		l := &coordinationv1.Lease{}
		require.NoError(t, dr.Get(f.ctx, client.ObjectKeyFromObject(heartbeat), l))
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(at))
		require.NoError(t, dr.Update(f.ctx, l))
	}

	reconcile()
	wall.Step(90 * time.Second) // quorum-manager's clock jumps; time itself does not
	for i := range 10 {
		step(time.Second)
		renew(t0.Add(time.Duration(i) * time.Second)) // the agent's own clock, not jumped
		reconcile()
		require.NotEqual(t, ReasonAgentSilent, readyReasonOf(f.request(t)), "a renewing agent %ds after the jump", i+1)
	}

	// The agent stops; its Lease stays as it is.
	step(4*time.Second + heartbeatGrace)
	reconcile()
	require.NotEqual(t, ReasonAgentSilent, readyReasonOf(f.request(t)), "within the Lease's duration and grace")
	step(time.Second)
	reconcile()
	fr := f.request(t)
	require.Equal(t, ReasonAgentSilent, readyReasonOf(fr), "silent for longer than its Lease's duration and grace")
	require.Contains(t, fr.Status.Message, "drbd-node-agent of node node-b on "+drCluster)
}

// waitingOnRenewingAgent: a planned request in WaitingForDRBD whose target
// replica on node-b is not promotable yet, with node-b's agent heartbeat
// renewed a second before t0 for a 4 s Lease.
func waitingOnRenewingAgent() (*fixture, *coordinationv1.Lease) {
	renewed := metav1.NewMicroTime(t0.Add(-time.Second))
	heartbeat := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: srv1alpha1.AgentHeartbeatNamespace, Name: srv1alpha1.AgentHeartbeatName("node-b")},
		Spec:       coordinationv1.LeaseSpec{RenewTime: &renewed, LeaseDurationSeconds: ptr.To(int32(4))},
	}
	notPromotable := []client.Object{groupCopyIn(testGroup, stopped, stopped), replica("node-b", sec, sec, false), node("node-b", false), heartbeat}
	return newFixture(phaseCase{phase: srv1alpha1.FailoverWaitingForDRBD,
		primary: cluster{objs: sourceStoppedSecondary}, dr: cluster{objs: notPromotable}}), heartbeat
}
