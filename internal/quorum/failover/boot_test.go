package failover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// at is a time on the target's clock, relative to t0, as a status read back
// from an API server holds it (local time, whole seconds).
func at(d time.Duration) *metav1.Time { return &metav1.Time{Time: t0.Add(d).Local()} }

// bootUnderWay is a boot whose first stage succeeded in 4s and whose second
// waits on one of its VMs.
func bootUnderWay() *srv1alpha1.BootStatus {
	return &srv1alpha1.BootStatus{StartTime: at(-10 * time.Second), Stages: []srv1alpha1.BootStageStatus{
		{Name: "db", Phase: srv1alpha1.StageSucceeded, VirtualMachines: []string{"apps/db"},
			StartTime: at(-10 * time.Second), VMsStartTime: at(-10 * time.Second), CompletionTime: at(-6 * time.Second)},
		{Name: "web", Phase: srv1alpha1.StageStarting, VirtualMachines: []string{"apps/web", "apps/web-2"}, Waiting: []string{"apps/web-2"},
			StartTime: at(-6 * time.Second), VMsStartTime: at(-6 * time.Second), Message: "waiting for apps/web-2 to pass the TCP gate on port 8080"},
	}}
}

// bootStoppedAtWeb is a boot whose web stage timed out after 30s with
// onStageTimeout Stop: the stage after it was skipped.
func bootStoppedAtWeb() *srv1alpha1.BootStatus {
	b := bootUnderWay()
	web := &b.Stages[1]
	web.Phase, web.CompletionTime, web.Message = srv1alpha1.StageTimedOut, at(24*time.Second), "timed out after 30s waiting for apps/web-2 to pass the TCP gate on port 8080"
	b.Stages = append(b.Stages, srv1alpha1.BootStageStatus{Name: "remaining", Phase: srv1alpha1.StageSkipped,
		VirtualMachines: []string{"apps/batch"}, Waiting: []string{"apps/batch"}, CompletionTime: at(24 * time.Second),
		Message: "not started: stage web did not succeed and the plan's onStageTimeout is Stop"})
	b.Stopped, b.CompletionTime = true, at(24*time.Second)
	return b
}

// withBoot is the target copy, asked to run and starting, reporting boot.
func withBoot(boot *srv1alpha1.BootStatus) *srv1alpha1.ProtectionGroup {
	pg := groupCopyIn(testGroup, running, srv1alpha1.StateStarting)
	pg.Status.Boot = boot
	return pg
}

// The target copy's boot is mirrored into the request while it waits, and
// its waiting message names the stage under way.
func TestStartingOnTargetFollowsTheBoot(t *testing.T) {
	f := newFixture(phaseCase{phase: srv1alpha1.FailoverStartingOnTarget, since: 10 * time.Second,
		primary: cluster{objs: sourceStoppedSecondary},
		dr:      cluster{objs: []client.Object{withBoot(bootUnderWay()), replica("node-b", pri, pri, true)}}})
	f.reconcile(t)
	fr := f.request(t)
	require.Equal(t, srv1alpha1.FailoverStartingOnTarget, fr.Status.Phase, fr.Status.Message)
	require.Equal(t, bootUnderWay(), fr.Status.Boot)
	require.Equal(t, `waiting for group g to run on dr (currentState "starting"); boot stage web (2/2) Starting: waiting for apps/web-2 to pass the TCP gate on port 8080`, fr.Status.Message)
}

// A boot plan that stopped on the target fails the request at once, well
// within batchBootTimeoutSeconds, saying which stage did not succeed and
// what the operator can do; the target stays the active cluster asked to
// run and the source stays stopped, as after a boot timeout. Planned
// failover (and failback, a planned request back to the first cluster) and
// unplanned failover start the group through this one phase.
func TestStoppedBootPlanFailsTheRequestAtOnce(t *testing.T) {
	for _, typ := range []srv1alpha1.FailoverType{srv1alpha1.FailoverPlanned, srv1alpha1.FailoverUnplanned} {
		t.Run(string(typ), func(t *testing.T) {
			f := newFixture(phaseCase{typ: typ, phase: srv1alpha1.FailoverStartingOnTarget, since: 40 * time.Second,
				primary: cluster{objs: sourceStoppedSecondary},
				dr:      cluster{objs: []client.Object{withBoot(bootStoppedAtWeb()), replica("node-b", pri, pri, true)}}})
			f.reconcile(t)
			fr := f.request(t)
			require.Equal(t, srv1alpha1.FailoverFailed, fr.Status.Phase, fr.Status.Message)
			for typ, want := range map[string]string{
				srv1alpha1.ConditionReady:         "False/" + srv1alpha1.ReasonBootPlanStopped,
				srv1alpha1.ConditionTargetRunning: "False/" + srv1alpha1.ReasonBootPlanStopped,
			} {
				c := meta.FindStatusCondition(fr.Status.Conditions, typ)
				require.NotNil(t, c, typ)
				require.Equal(t, want, string(c.Status)+"/"+c.Reason, "%s: %s", typ, c.Message)
			}
			require.Equal(t, "the boot plan of g stopped on dr: stage web TimedOut (timed out after 30s waiting for apps/web-2 to pass the TCP gate on port 8080)"+
				"; not started, left stopped: apps/batch; started but did not pass the gate: apps/web-2"+
				"; the group stays on dr, already promoted: DRBD is primary there and it is now the active cluster; the source stays stopped."+
				" Fix what stage web waited for, then start the VMs left stopped by hand (virtctl start), or set spec.boot.onStageTimeout: Continue on the group and its later stages start",
				fr.Status.Message)
			require.Equal(t, bootStoppedAtWeb(), fr.Status.Boot, "the request keeps the boot as the target reported it")

			q := &srv1alpha1.ProtectionGroup{}
			require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: testGroup}, q))
			require.Equal(t, drCluster, q.Spec.ActiveCluster, "the target is the active cluster")
			require.Equal(t, running, f.groupCopy(t, drCluster).Spec.DesiredState, "the target stays asked to run")
			require.Equal(t, stopped, f.groupCopy(t, primary).Spec.DesiredState, "nothing restarts on the source")

			// StartingOnTarget's time is split across the stages.
			last := fr.Status.PhaseTimings[len(fr.Status.PhaseTimings)-1]
			require.Equal(t, string(srv1alpha1.FailoverStartingOnTarget), last.Phase)
			require.Equal(t, []srv1alpha1.StageTiming{
				{Stage: "db", Milliseconds: 4000, Phase: srv1alpha1.StageSucceeded},
				{Stage: "web", Milliseconds: 30000, Phase: srv1alpha1.StageTimedOut},
				{Stage: "remaining", Phase: srv1alpha1.StageSkipped},
			}, last.Stages)
		})
	}
}

// A stopped boot reported for an older spec of the copy (pg-controller has
// not observed the latest) does not fail the request.
func TestStoppedBootOfAnOlderSpecIsNotFinal(t *testing.T) {
	pg := withBoot(bootStoppedAtWeb())
	pg.Generation = 2
	f := newFixture(phaseCase{phase: srv1alpha1.FailoverStartingOnTarget, since: 40 * time.Second,
		primary: cluster{objs: sourceStoppedSecondary},
		dr:      cluster{objs: []client.Object{pg, replica("node-b", pri, pri, true)}}})
	f.reconcile(t)
	require.Equal(t, srv1alpha1.FailoverStartingOnTarget, f.request(t).Status.Phase, f.request(t).Status.Message)
}

// stageTimings: each stage from its start to its end, or to the phase's end
// when it had not ended; a stage that never started took no time.
func TestStageTimings(t *testing.T) {
	end := t0.Add(3 * time.Second)
	require.Equal(t, []srv1alpha1.StageTiming{
		{Stage: "db", Milliseconds: 4000, Phase: srv1alpha1.StageSucceeded},
		{Stage: "web", Milliseconds: 9000, Phase: srv1alpha1.StageStarting},
	}, stageTimings(bootUnderWay(), end))

	pending := &srv1alpha1.BootStatus{Stages: []srv1alpha1.BootStageStatus{{Name: "db", Phase: srv1alpha1.StagePending}}}
	require.Equal(t, []srv1alpha1.StageTiming{{Stage: "db", Phase: srv1alpha1.StagePending}}, stageTimings(pending, end))
	require.Nil(t, stageTimings(nil, end), "no boot plan: no stages")
}

// The split goes to the StartingOnTarget entry of phaseTimings only, with the
// boot as the request last copied it.
func TestPhaseTimingsSplitStartingOnTargetByStage(t *testing.T) {
	var c clocks
	fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}}
	s := newScope(fr, t0.Add(-20*time.Second))
	s.trail.Enter(srv1alpha1.FailoverWaitingForDRBD, "promoting")
	c.end(s, nil, s.now)
	fr = s.req
	s = newScope(fr, t0.Add(-10*time.Second))
	s.trail.Enter(srv1alpha1.FailoverStartingOnTarget, "starting")
	c.end(s, nil, s.now)
	fr = s.req
	fr.Status.Boot = bootUnderWay()
	s = newScope(fr, t0.Add(3*time.Second))
	s.trail.Succeed(srv1alpha1.ReasonFailoverCompleted, "done")
	c.end(s, nil, s.now)

	timings := s.req.Status.PhaseTimings
	require.Len(t, timings, 2)
	require.Equal(t, "WaitingForDRBD", timings[0].Phase)
	require.Nil(t, timings[0].Stages)
	require.Equal(t, "StartingOnTarget", timings[1].Phase)
	require.Equal(t, []srv1alpha1.StageTiming{
		{Stage: "db", Milliseconds: 4000, Phase: srv1alpha1.StageSucceeded},
		{Stage: "web", Milliseconds: 9000, Phase: srv1alpha1.StageStarting},
	}, timings[1].Stages)
}
