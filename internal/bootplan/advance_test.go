package bootplan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

var t0 = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

// twoTier is a database gated on its TCP port, then the web servers.
func twoTier(onTimeout srv1alpha1.StageTimeoutAction) *srv1alpha1.BootPlan {
	return &srv1alpha1.BootPlan{OnStageTimeout: onTimeout, Stages: []srv1alpha1.BootStage{
		{Name: "db", VirtualMachines: []string{"db"}, TimeoutSeconds: 60, Gate: srv1alpha1.BootGate{Type: srv1alpha1.GateTCP, Port: 5432}},
		{Name: "web", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}, TimeoutSeconds: 120},
	}}
}

var appVMs = []VM{{Key: "app/db"}, {Key: "app/web1", Labels: map[string]string{"tier": "web"}}, {Key: "app/web2", Labels: map[string]string{"tier": "web"}}, {Key: "app/cache"}}

// run advances plan over vms with facts, as a reconcile at now after last.
func run(t *testing.T, plan *srv1alpha1.BootPlan, facts map[string]Facts, last *srv1alpha1.BootStatus, now time.Time) Output {
	t.Helper()
	stages, err := Stages(plan, appVMs)
	require.NoError(t, err)
	return Advance(Input{Plan: plan, Stages: stages, Facts: facts, Last: last, Now: now})
}

func phases(st *srv1alpha1.BootStatus) map[string]srv1alpha1.BootStagePhase {
	out := map[string]srv1alpha1.BootStagePhase{}
	for _, s := range st.Stages {
		out[s.Name] = s.Phase
	}
	return out
}

func TestStagesSortsVMsFirstStageWins(t *testing.T) {
	plan := &srv1alpha1.BootPlan{Stages: []srv1alpha1.BootStage{
		{Name: "a", VirtualMachines: []string{"app/db", "web1", "nosuch"}},
		{Name: "b", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}},
	}}
	stages, err := Stages(plan, appVMs)
	require.NoError(t, err)
	require.Len(t, stages, 3)
	require.Equal(t, []string{"app/db", "app/web1"}, stages[0].VMs)
	require.Equal(t, []string{"nosuch"}, stages[0].Unknown)
	require.Equal(t, []string{"app/web2"}, stages[1].VMs, "web1 stays in the first stage that names it")
	require.Equal(t, srv1alpha1.ImplicitStageName, stages[2].Name)
	require.Equal(t, []string{"app/cache"}, stages[2].VMs)

	none, err := Stages(nil, appVMs)
	require.NoError(t, err)
	require.Len(t, none, 1, "no plan: one implicit stage with every VM")
	require.Len(t, none[0].VMs, 4)

	_, err = Stages(&srv1alpha1.BootPlan{Stages: []srv1alpha1.BootStage{{Name: "x", Selector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Bogus"}}}}}}, appVMs)
	require.ErrorContains(t, err, "boot stage x")
}

func TestStagesStartInOrderBehindTheirGates(t *testing.T) {
	plan := twoTier(srv1alpha1.StageTimeoutStop)
	facts := map[string]Facts{"app/db": {Exists: true}, "app/web1": {Exists: true}, "app/web2": {Exists: true}, "app/cache": {Exists: true}}

	out := run(t, plan, facts, nil, t0)
	require.Equal(t, map[string]bool{"app/db": true}, out.Run, "only the first stage's VM may run")
	require.Equal(t, map[string]srv1alpha1.BootStagePhase{"db": srv1alpha1.StageStarting, "web": srv1alpha1.StagePending, "remaining": srv1alpha1.StagePending}, phases(out.Status))
	require.Equal(t, 60*time.Second, out.After, "woken at the stage's timeout")
	require.Contains(t, out.Status.Stages[0].Message, "app/db is not Ready")
	require.Nil(t, out.Status.CompletionTime)

	// Ready, with an address: the TCP probe is asked for, and the stage waits on it.
	facts["app/db"] = Facts{Exists: true, Ready: true, Address: "10.0.0.5"}
	out = run(t, plan, facts, out.Status, t0.Add(10*time.Second))
	require.Len(t, out.Probes, 1)
	require.Equal(t, Probe{VM: "app/db", Gate: plan.Stages[0].Gate, Address: "10.0.0.5", Deadline: t0.Add(60 * time.Second)}, out.Probes[0])
	require.Equal(t, srv1alpha1.StageStarting, out.Status.Stages[0].Phase)
	require.False(t, out.Run["app/web1"])

	// The probe succeeds: db ends, web starts in the same pass.
	facts["app/db"] = Facts{Exists: true, Ready: true, Address: "10.0.0.5", Probe: JobResult{State: JobSucceeded}}
	out = run(t, plan, facts, out.Status, t0.Add(20*time.Second))
	require.Equal(t, srv1alpha1.StageSucceeded, out.Status.Stages[0].Phase)
	require.Equal(t, t0.Add(20*time.Second), out.Status.Stages[0].CompletionTime.Time)
	require.Equal(t, map[string]bool{"app/db": true, "app/web1": true, "app/web2": true}, out.Run)
	require.Equal(t, t0.Add(20*time.Second), out.Status.Stages[1].StartTime.Time)

	for _, vm := range []string{"app/web1", "app/web2", "app/cache"} {
		facts[vm] = Facts{Exists: true, Ready: true}
	}
	out = run(t, plan, facts, out.Status, t0.Add(30*time.Second))
	require.Equal(t, map[string]srv1alpha1.BootStagePhase{"db": srv1alpha1.StageSucceeded, "web": srv1alpha1.StageSucceeded, "remaining": srv1alpha1.StageSucceeded}, phases(out.Status))
	require.Len(t, out.Run, 4)
	require.Equal(t, t0.Add(30*time.Second), out.Status.CompletionTime.Time)
	require.Equal(t, t0, out.Status.StartTime.Time, "the boot keeps its start")
	require.False(t, out.Status.Stopped)
	require.Zero(t, out.After)
}

func TestATimedOutStageStopsOrContinuesThePlan(t *testing.T) {
	facts := map[string]Facts{"app/db": {Exists: true, Ready: true, Address: "10.0.0.5", Probe: JobResult{State: JobFailed, Message: "Job app/x failed: DeadlineExceeded"}}}
	for _, action := range []srv1alpha1.StageTimeoutAction{srv1alpha1.StageTimeoutStop, srv1alpha1.StageTimeoutContinue} {
		t.Run(string(action), func(t *testing.T) {
			plan := twoTier(action)
			out := run(t, plan, facts, nil, t0)
			require.Contains(t, out.Status.Stages[0].Message, "failed its probe: Job app/x failed: DeadlineExceeded")
			require.Equal(t, []string{"app/db"}, out.Status.Stages[0].Waiting)

			out = run(t, plan, facts, out.Status, t0.Add(61*time.Second))
			db := out.Status.Stages[0]
			require.Equal(t, srv1alpha1.StageTimedOut, db.Phase)
			require.Contains(t, db.Message, "timed out after 1m0s waiting for the TCP gate: app/db failed its probe")
			require.True(t, out.Run["app/db"], "a VM that was started stays asked to run")
			if action == srv1alpha1.StageTimeoutStop {
				require.True(t, out.Status.Stopped)
				require.Equal(t, map[string]bool{"app/db": true}, out.Run, "the later stages' VMs stay stopped")
				web := out.Status.Stages[1]
				require.Equal(t, srv1alpha1.StageSkipped, web.Phase)
				require.Equal(t, []string{"app/web1", "app/web2"}, web.Waiting)
				require.Contains(t, web.Message, "not started: stage db did not succeed and the plan's onStageTimeout is Stop")
				require.Equal(t, srv1alpha1.StageSkipped, out.Status.Stages[2].Phase)
				require.NotNil(t, out.Status.CompletionTime)
				return
			}
			require.False(t, out.Status.Stopped)
			require.Equal(t, srv1alpha1.StageStarting, out.Status.Stages[1].Phase, "Continue starts the next stage")
			require.True(t, out.Run["app/web1"])
			require.False(t, out.Run["app/cache"])
		})
	}
}

func TestStepsRunAroundTheStagesVMs(t *testing.T) {
	step := &srv1alpha1.BootStep{Image: "registry.example/migrate:1"}
	plan := &srv1alpha1.BootPlan{Stages: []srv1alpha1.BootStage{
		{Name: "db", VirtualMachines: []string{"db"}, TimeoutSeconds: 60, PreStart: step, PostStart: step},
	}}
	facts := map[string]Facts{"app/db": {Exists: true, Ready: true}}
	steps := map[StepKey]JobResult{}
	in := func(last *srv1alpha1.BootStatus, now time.Time) Output {
		stages, err := Stages(plan, []VM{{Key: "app/db"}})
		require.NoError(t, err)
		return Advance(Input{Plan: plan, Stages: stages, Facts: facts, Steps: steps, Last: last, Now: now})
	}

	out := in(nil, t0)
	require.Empty(t, out.Run, "no VM starts before the pre-start step succeeded")
	require.Equal(t, []Step{{StepKey: StepKey{"db", PreStart}, Spec: step, Namespace: "app", Deadline: t0.Add(time.Minute)}}, out.Steps)
	require.Equal(t, srv1alpha1.StagePreStart, out.Status.Stages[0].Phase)

	steps[StepKey{"db", PreStart}] = JobResult{State: JobSucceeded}
	out = in(out.Status, t0.Add(5*time.Second))
	require.True(t, out.Run["app/db"])
	require.Equal(t, t0.Add(5*time.Second), out.Status.Stages[0].VMsStartTime.Time)
	require.Equal(t, srv1alpha1.StagePostStart, out.Status.Stages[0].Phase, "the VM was Ready: the post-start step runs")
	require.Equal(t, StepKey{"db", PostStart}, out.Steps[0].StepKey)

	steps[StepKey{"db", PostStart}] = JobResult{State: JobFailed, Message: "Job app/p failed: BackoffLimitExceeded"}
	out = in(out.Status, t0.Add(9*time.Second))
	require.Equal(t, srv1alpha1.StageFailed, out.Status.Stages[0].Phase)
	require.Contains(t, out.Status.Stages[0].Message, "post-start step failed: Job app/p failed: BackoffLimitExceeded")
	require.True(t, out.Status.Stopped)

	// A failed pre-start step never starts the VM.
	steps = map[StepKey]JobResult{{"db", PreStart}: {State: JobFailed, Message: "Job app/q failed: BackoffLimitExceeded"}}
	out = in(nil, t0)
	require.Equal(t, srv1alpha1.StageFailed, out.Status.Stages[0].Phase)
	require.Empty(t, out.Run)
	require.Contains(t, out.Status.Stages[0].Message, "the stage's VMs were not started")
}

func TestGuestAgentGateAndResumeAfterRestart(t *testing.T) {
	plan := &srv1alpha1.BootPlan{Stages: []srv1alpha1.BootStage{
		{Name: "db", VirtualMachines: []string{"db"}, TimeoutSeconds: 60, Gate: srv1alpha1.BootGate{Type: srv1alpha1.GateGuestAgent}},
	}}
	facts := map[string]Facts{"app/db": {Exists: true, Ready: true}, "app/web1": {Exists: true, Ready: true}, "app/web2": {Exists: true, Ready: true}, "app/cache": {Exists: true, Ready: true}}
	out := run(t, plan, facts, nil, t0)
	require.Contains(t, out.Status.Stages[0].Message, "app/db has no guest agent connected")
	// A restarted controller has only the status: the stage keeps its start,
	// so its deadline does not move.
	out = run(t, plan, facts, out.Status.DeepCopy(), t0.Add(30*time.Second))
	require.Equal(t, 30*time.Second, out.After)
	facts["app/db"] = Facts{Exists: true, Ready: true, AgentConnected: true}
	out = run(t, plan, facts, out.Status, t0.Add(40*time.Second))
	require.Equal(t, map[string]srv1alpha1.BootStagePhase{"db": srv1alpha1.StageSucceeded, "remaining": srv1alpha1.StageSucceeded}, phases(out.Status))
}

// A boot's Jobs keep their names from the reconcile that set its start to
// every later one, which reads the start back from status at second
// precision; the next boot's are new.
func TestBootIDSurvivesTheStatusRoundTrip(t *testing.T) {
	start := t0.Add(123456789 * time.Nanosecond)
	stored := metav1.NewTime(start).Rfc3339Copy()
	require.Equal(t, BootID("uid", start), BootID("uid", stored.Time))
	require.NotEqual(t, BootID("uid", start), BootID("uid", start.Add(time.Second)))
	require.NotEqual(t, BootID("uid", start), BootID("other", start))
	k := StepKey{Stage: "db", Kind: PreStart}
	require.Equal(t, StepJobName(BootID("uid", start), k), StepJobName(BootID("uid", stored.Time), k))
	require.LessOrEqual(t, len(ProbeJobName(BootID("uid", start), "a-namespace-of-63-characters-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/vm")), 63)
}
