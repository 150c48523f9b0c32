// Package bootfixture holds a boot plan and the finished boots of a
// failover and a test failover, written as the controllers write them, for
// the console's tests: the server's JSON model and the browser test read the
// same objects.
package bootfixture

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Names and values the tests look for.
const (
	Failover = "fo-boot"
	Test     = "drill-boot"
	// StepEnvValue is a step's env value: the console never shows it.
	StepEnvValue = "literal-env-value-not-for-the-console"
	PreImage     = "registry.example.com/db-prepare:1.2"
	PostImage    = "registry.example.com/smoke-test:2.0"
	// TimedOutMessage is the message of the test's stage that timed out.
	TimedOutMessage = "timed out after 10m0s waiting for the TCP gate: apps/vm-00 did not accept a connection on port 5432"
)

// Stage durations of the failover as phaseTimings splits StartingOnTarget.
const (
	DatabaseMillis  = 42310
	WebMillis       = 25870
	RemainingMillis = 3900
)

// Plan is a two-stage plan: the database VM gated on its TCP port after a
// pre-start step, then the web VMs by selector gated on HTTP, with a
// post-start step; the implicit stage comes last.
func Plan() *srv1alpha1.BootPlan {
	return &srv1alpha1.BootPlan{OnStageTimeout: srv1alpha1.StageTimeoutStop, Stages: []srv1alpha1.BootStage{
		{Name: "database", VirtualMachines: []string{"apps/vm-00"}, TimeoutSeconds: 600,
			Gate:     srv1alpha1.BootGate{Type: srv1alpha1.GateTCP, Port: 5432},
			PreStart: &srv1alpha1.BootStep{Image: PreImage, Args: []string{"--check"}, Env: []srv1alpha1.BootStepEnv{{Name: "MODE", Value: StepEnvValue}}}},
		{Name: "web", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}, TimeoutSeconds: 300,
			Gate:      srv1alpha1.BootGate{Type: srv1alpha1.GateHTTP, Port: 8080, Path: "/healthz"},
			PostStart: &srv1alpha1.BootStep{Image: PostImage}},
	}}
}

// Write sets the plan on group ns/name and creates, from t0 on, a completed
// failover whose plan succeeded and a failed test failover whose plan
// stopped at its database stage, with their statuses.
func Write(ctx context.Context, c client.Client, ns, group, target string, t0 time.Time) error {
	g := &srv1alpha1.ProtectionGroup{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: group}, g); err != nil {
		return err
	}
	g.Spec.Boot = Plan()
	if err := c.Update(ctx, g); err != nil {
		return err
	}
	at := func(s int) *metav1.Time { t := metav1.NewTime(t0.Add(time.Duration(s) * time.Second)); return &t }
	micro := func(s int) metav1.MicroTime { return metav1.NewMicroTime(t0.Add(time.Duration(s) * time.Second)) }
	ref := srv1alpha1.ProtectionGroupReference{Name: group, Namespace: ns}

	fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: Failover},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: ref, TargetCluster: target}}
	if err := c.Create(ctx, fr); err != nil {
		return err
	}
	fr.Status = srv1alpha1.FailoverRequestStatus{Phase: srv1alpha1.FailoverCompleted, StartTime: at(0), CompletionTime: at(95),
		PhaseHistory: []srv1alpha1.PhaseTransition{{Phase: "StoppingOnSource", Time: micro(0)}, {Phase: "WaitingForDRBD", Time: micro(12)},
			{Phase: "StartingOnTarget", Time: micro(20)}, {Phase: "Completed", Time: micro(95)}},
		PhaseTimings: []srv1alpha1.PhaseTiming{{Phase: string(srv1alpha1.FailoverStartingOnTarget), WorkloadMilliseconds: 72080, Stages: []srv1alpha1.StageTiming{
			{Stage: "database", Milliseconds: DatabaseMillis, Phase: srv1alpha1.StageSucceeded},
			{Stage: "web", Milliseconds: WebMillis, Phase: srv1alpha1.StageSucceeded},
			{Stage: srv1alpha1.ImplicitStageName, Milliseconds: RemainingMillis, Phase: srv1alpha1.StageSucceeded}}}},
		Boot: &srv1alpha1.BootStatus{StartTime: at(20), CompletionTime: at(92), Stages: []srv1alpha1.BootStageStatus{
			{Name: "database", Phase: srv1alpha1.StageSucceeded, VirtualMachines: []string{"apps/vm-00"}, StartTime: at(20), VMsStartTime: at(24), CompletionTime: at(62)},
			{Name: "web", Phase: srv1alpha1.StageSucceeded, VirtualMachines: []string{"apps/vm-01"}, StartTime: at(62), VMsStartTime: at(62), CompletionTime: at(88)},
			{Name: srv1alpha1.ImplicitStageName, Phase: srv1alpha1.StageSucceeded, StartTime: at(88), VMsStartTime: at(88), CompletionTime: at(92)},
		}}}
	if err := c.Status().Update(ctx, fr); err != nil {
		return err
	}

	tf := &srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: Test},
		Spec: srv1alpha1.TestFailoverSpec{ProtectionGroupRef: ref, TargetCluster: target}}
	if err := c.Create(ctx, tf); err != nil {
		return err
	}
	stopped := "the boot plan stopped at stage database (TimedOut)"
	tf.Status = srv1alpha1.TestFailoverStatus{Phase: srv1alpha1.TestFailoverFailed, StartTime: at(200), CompletionTime: at(840),
		PhaseHistory: []srv1alpha1.PhaseTransition{{Phase: "Snapshotting", Time: micro(200)}, {Phase: "Booting", Time: micro(210)},
			{Phase: "CleaningUp", Time: micro(820)}, {Phase: "Failed", Time: micro(840)}},
		Results: []srv1alpha1.CheckResult{{VM: "vm-01", Check: "VMReady", Passed: false,
			Message: "not started: boot stage database did not succeed (TimedOut) and the plan's onStageTimeout is Stop"}},
		Conditions: []metav1.Condition{{Type: srv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "ChecksFailed",
			Message: "1 of 1 checks failed; " + stopped, LastTransitionTime: *at(840)}},
		Boot: &srv1alpha1.BootStatus{StartTime: at(210), CompletionTime: at(810), Stopped: true, Stages: []srv1alpha1.BootStageStatus{
			{Name: "database", Phase: srv1alpha1.StageTimedOut, VirtualMachines: []string{"apps/vm-00"}, Waiting: []string{"apps/vm-00"},
				StartTime: at(210), VMsStartTime: at(215), CompletionTime: at(810), Message: TimedOutMessage},
			{Name: "web", Phase: srv1alpha1.StageSkipped, VirtualMachines: []string{"apps/vm-01"}, Message: stopped},
			{Name: srv1alpha1.ImplicitStageName, Phase: srv1alpha1.StageSkipped, Message: stopped},
		}}}
	return c.Status().Update(ctx, tf)
}
