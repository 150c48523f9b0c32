package protectiongroup_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/bootplan"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
)

// twoTierGroup is a database gated on its TCP port 5432, then two web
// servers (by label) behind a pre-start step, then a VM no stage names.
func twoTierGroup(onTimeout srv1alpha1.StageTimeoutAction, dbGate srv1alpha1.BootGate, dbTimeout int32) *srv1alpha1.ProtectionGroup {
	refs := []srv1alpha1.VirtualMachineReference{{Name: "db", Namespace: appNS}, {Name: "web1", Namespace: appNS}, {Name: "web2", Namespace: appNS}, {Name: "cache", Namespace: appNS}}
	return &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: groupNS},
		Spec: srv1alpha1.ProtectionGroupSpec{DesiredState: srv1alpha1.StateRunning, VirtualMachines: refs,
			Boot: &srv1alpha1.BootPlan{OnStageTimeout: onTimeout, Stages: []srv1alpha1.BootStage{
				{Name: "db", VirtualMachines: []string{"db"}, Gate: dbGate, TimeoutSeconds: dbTimeout},
				{Name: "web", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}, TimeoutSeconds: 60,
					PreStart: &srv1alpha1.BootStep{Image: "registry.example/warm-cache:1", Args: []string{"--db", "db." + appNS},
						Env: []srv1alpha1.BootStepEnv{{Name: "MODE", Value: "warm"}}}},
			}}},
	}
}

// createHaltedVMs creates the two-tier group's VMs, stopped.
func createHaltedVMs(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	for _, name := range []string{"db", "web1", "web2", "cache"} {
		vm := newVM(name, false, kubevirtv1.RunStrategyHalted)
		if name != "db" && name != "cache" {
			vm.Labels = map[string]string{"tier": "web"}
		}
		require.NoError(t, c.Create(ctx, vm))
	}
}

func runStrategy(t *testing.T, ctx context.Context, c client.Client, name string) kubevirtv1.VirtualMachineRunStrategy {
	t.Helper()
	vm := &kubevirtv1.VirtualMachine{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: appNS, Name: name}, vm))
	if vm.Spec.RunStrategy == nil {
		return ""
	}
	return *vm.Spec.RunStrategy
}

func bootOf(t *testing.T, ctx context.Context, c client.Client) *srv1alpha1.BootStatus {
	t.Helper()
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: groupNS, Name: "pg"}, g))
	return g.Status.Boot
}

func stage(st *srv1alpha1.BootStatus, name string) srv1alpha1.BootStageStatus {
	if st != nil {
		for _, s := range st.Stages {
			if s.Name == name {
				return s
			}
		}
	}
	return srv1alpha1.BootStageStatus{}
}

func stagePhase(ctx context.Context, c client.Client, name string, want srv1alpha1.BootStagePhase) func() error {
	return func() error {
		g := &srv1alpha1.ProtectionGroup{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: groupNS, Name: "pg"}, g); err != nil {
			return err
		}
		if got := stage(g.Status.Boot, name); got.Phase != want {
			return fmt.Errorf("stage %s is %q (%s), want %s", name, got.Phase, got.Message, want)
		}
		return nil
	}
}

// bootJob waits for the boot's Job of kind ("pre", "post" or "gate") and returns it.
func bootJob(t *testing.T, ctx context.Context, c client.Client, kind string) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	eventually(t, "a "+kind+" Job of the boot", func() error {
		jobs := &batchv1.JobList{}
		if err := c.List(ctx, jobs, client.InNamespace(appNS), client.MatchingLabels{bootplan.LabelKind: kind}); err != nil {
			return err
		}
		if len(jobs.Items) != 1 {
			return fmt.Errorf("%d %s Jobs", len(jobs.Items), kind)
		}
		job = &jobs.Items[0]
		return nil
	})
	return job
}

// finishJob sets a Job's status as the Job controller does when its pod
// succeeded or failed (kubernetes pkg/controller/job: SuccessCriteriaMet or
// FailureTarget precedes Complete or Failed, which status validation checks).
func finishJob(t *testing.T, ctx context.Context, c client.Client, job *batchv1.Job, ok bool) {
	t.Helper()
	now := metav1.Now()
	before := job.DeepCopy()
	job.Status.StartTime = &now
	if ok {
		job.Status.Succeeded, job.Status.CompletionTime = 1, &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now}}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline", LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline", LastTransitionTime: now, LastProbeTime: now}}
	}
	require.NoError(t, c.Status().Patch(ctx, job, client.MergeFrom(before)))
}

// requireRestricted: the Job's pod meets PodSecurity "restricted".
func requireRestricted(t *testing.T, job *batchv1.Job) {
	t.Helper()
	pod := job.Spec.Template.Spec
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
	require.Len(t, pod.Containers, 1)
	sc := pod.Containers[0].SecurityContext
	require.False(t, *sc.AllowPrivilegeEscalation)
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	require.Nil(t, sc.Privileged)
	require.False(t, pod.HostNetwork)
}

// TestBootPlanStartsStagesInOrder: asked to run, the group starts the
// database alone; the web servers stay halted until its TCP gate's probe
// succeeded and their pre-start step completed; the VM no stage names
// starts last; status.boot records each stage's times; stopping the group
// clears the boot and deletes its Jobs.
func TestBootPlanStartsStagesInOrder(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	createHaltedVMs(t, ctx, c)
	require.NoError(t, c.Create(ctx, twoTierGroup(srv1alpha1.StageTimeoutStop, srv1alpha1.BootGate{Type: srv1alpha1.GateTCP, Port: 5432}, 60)))

	eventually(t, "db asked to run", func() error {
		if s := runStrategy(t, ctx, c, "db"); s != kubevirtv1.RunStrategyAlways {
			return fmt.Errorf("db runStrategy %q", s)
		}
		return nil
	})
	eventually(t, "db's VMI Ready", stagePhase(ctx, c, "db", srv1alpha1.StageStarting))
	// The simulated VMI has no interface: give it the address KubeVirt
	// reports, which the probe connects to.
	vmi := &kubevirtv1.VirtualMachineInstance{}
	eventually(t, "db's VMI", func() error { return c.Get(ctx, client.ObjectKey{Namespace: appNS, Name: "db"}, vmi) })
	before := vmi.DeepCopy()
	vmi.Status.Interfaces = []kubevirtv1.VirtualMachineInstanceNetworkInterface{{Name: "default", IP: "10.244.1.7"}}
	require.NoError(t, c.Patch(ctx, vmi, client.MergeFrom(before)))

	probe := bootJob(t, ctx, c, "gate")
	requireRestricted(t, probe)
	require.Equal(t, []string{"-tcp", "10.244.1.7:5432", "-timeout", "10s"}, probe.Spec.Template.Spec.Containers[0].Args)
	require.Equal(t, "pg", probe.Labels[srv1alpha1.ProtectionGroupLabel])
	require.LessOrEqual(t, *probe.Spec.ActiveDeadlineSeconds, int64(60), "a probe never outlives its stage")
	for _, web := range []string{"web1", "web2", "cache"} {
		require.Equal(t, kubevirtv1.RunStrategyHalted, runStrategy(t, ctx, c, web), "%s started before the database's gate passed", web)
	}
	eventually(t, "db waiting for its probe", func() error {
		if m := stage(bootOf(t, ctx, c), "db").Message; !strings.Contains(m, "apps/db has not answered TCP on port 5432 yet") {
			return fmt.Errorf("db stage says %q", m)
		}
		return nil
	})

	finishJob(t, ctx, c, probe, true)
	eventually(t, "db's stage done", stagePhase(ctx, c, "db", srv1alpha1.StageSucceeded))
	pre := bootJob(t, ctx, c, "pre")
	requireRestricted(t, pre)
	require.Equal(t, "registry.example/warm-cache:1", pre.Spec.Template.Spec.Containers[0].Image)
	require.Equal(t, []corev1.EnvVar{{Name: "MODE", Value: "warm"}}, pre.Spec.Template.Spec.Containers[0].Env)
	require.Equal(t, int32(0), *pre.Spec.BackoffLimit, "a step is not retried")
	eventually(t, "web running its pre-start step", stagePhase(ctx, c, "web", srv1alpha1.StagePreStart))
	for _, web := range []string{"web1", "web2"} {
		require.Equal(t, kubevirtv1.RunStrategyHalted, runStrategy(t, ctx, c, web), "%s started before its pre-start step ended", web)
	}

	finishJob(t, ctx, c, pre, true)
	eventually(t, "group running", groupState(ctx, c, srv1alpha1.StateRunning))
	boot := bootOf(t, ctx, c)
	require.NotNil(t, boot.CompletionTime)
	require.False(t, boot.Stopped)
	require.Equal(t, []string{"db", "web", srv1alpha1.ImplicitStageName}, names(boot))
	db, web, rest := stage(boot, "db"), stage(boot, "web"), stage(boot, srv1alpha1.ImplicitStageName)
	for _, s := range []srv1alpha1.BootStageStatus{db, web, rest} {
		require.Equal(t, srv1alpha1.StageSucceeded, s.Phase, "stage %s", s.Name)
	}
	require.Equal(t, []string{appNS + "/web1", appNS + "/web2"}, web.VirtualMachines)
	require.Equal(t, []string{appNS + "/cache"}, rest.VirtualMachines)
	require.False(t, web.VMsStartTime.Before(db.CompletionTime), "web started before db's gate passed")
	require.False(t, rest.StartTime.Before(web.CompletionTime), "the implicit stage started before web ended")

	setDesired(t, ctx, c, srv1alpha1.StateStopped)
	eventually(t, "group stopped", groupState(ctx, c, srv1alpha1.StateStopped))
	eventually(t, "the boot's Jobs deleted and its status cleared", func() error {
		jobs := &batchv1.JobList{}
		if err := c.List(ctx, jobs, client.HasLabels{bootplan.LabelBoot}); err != nil {
			return err
		}
		live := slices.DeleteFunc(jobs.Items, func(j batchv1.Job) bool { return j.DeletionTimestamp != nil })
		if len(live) > 0 || bootOf(t, ctx, c) != nil {
			return fmt.Errorf("%d Jobs left, boot %+v", len(live), bootOf(t, ctx, c))
		}
		return nil
	})
}

// TestBootStageTimeoutStopsThePlan: the database's guest agent never
// connects; when its stage times out and the plan says Stop, the web servers
// and the unnamed VM are never started, and the group says which stage
// stopped the plan and which VMs stay stopped.
func TestBootStageTimeoutStopsThePlan(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	createHaltedVMs(t, ctx, c)
	require.NoError(t, c.Create(ctx, twoTierGroup(srv1alpha1.StageTimeoutStop, srv1alpha1.BootGate{Type: srv1alpha1.GateGuestAgent}, 2)))

	eventually(t, "db's stage timed out", stagePhase(ctx, c, "db", srv1alpha1.StageTimedOut))
	boot := bootOf(t, ctx, c)
	require.True(t, boot.Stopped)
	require.Contains(t, stage(boot, "db").Message, "db has no guest agent connected")
	require.Equal(t, []string{appNS + "/db"}, stage(boot, "db").Waiting)
	web := stage(boot, "web")
	require.Equal(t, srv1alpha1.StageSkipped, web.Phase)
	require.Equal(t, []string{appNS + "/web1", appNS + "/web2"}, web.Waiting)
	require.Contains(t, web.Message, "not started: stage db did not succeed")
	require.Equal(t, srv1alpha1.StageSkipped, stage(boot, srv1alpha1.ImplicitStageName).Phase)
	eventually(t, "the Ready condition names the stage", readyMessage(ctx, c, "boot plan stopped: stage db TimedOut"))
	require.Equal(t, kubevirtv1.RunStrategyAlways, runStrategy(t, ctx, c, "db"), "a started VM stays started")
	for _, vm := range []string{"web1", "web2", "cache"} {
		require.Equal(t, kubevirtv1.RunStrategyHalted, runStrategy(t, ctx, c, vm), "%s started after the plan stopped", vm)
	}
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: groupNS, Name: "pg"}, g))
	require.Equal(t, srv1alpha1.StateStarting, g.Status.CurrentState)
	for _, v := range g.Status.VirtualMachines {
		if v.Name == "web1" {
			require.Equal(t, "not started: the boot plan stopped before stage web", v.Message)
		}
	}
}

func names(st *srv1alpha1.BootStatus) []string {
	var out []string
	for _, s := range st.Stages {
		out = append(out, s.Name)
	}
	return out
}

// TestBootPlanRecordedWhenVMsStartAtOnce: VMs that start the moment they
// are asked still start stage by stage, and the boot is recorded although
// every VM ran before its first status write settled; a plan added to a
// group that already runs orders no start and restarts nothing.
func TestBootPlanRecordedWhenVMsStartAtOnce(t *testing.T) {
	c := startClusterWith(t, kubevirtsim.Options{})
	ctx := context.Background()
	createHaltedVMs(t, ctx, c)
	g := twoTierGroup(srv1alpha1.StageTimeoutStop, srv1alpha1.BootGate{}, 30)
	g.Spec.Boot.Stages[1].PreStart = nil
	require.NoError(t, c.Create(ctx, g))
	eventually(t, "group running with its boot recorded", func() error {
		if err := groupState(ctx, c, srv1alpha1.StateRunning)(); err != nil {
			return err
		}
		if b := bootOf(t, ctx, c); b == nil || b.CompletionTime == nil {
			return fmt.Errorf("boot %+v", b)
		}
		return nil
	})
	boot := bootOf(t, ctx, c)
	db, web := stage(boot, "db"), stage(boot, "web")
	require.Equal(t, srv1alpha1.StageSucceeded, db.Phase)
	require.Equal(t, srv1alpha1.StageSucceeded, web.Phase)
	require.False(t, web.VMsStartTime.Before(db.CompletionTime), "web started before db was Ready")

	other := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Name: "running", Namespace: groupNS},
		Spec: srv1alpha1.ProtectionGroupSpec{DesiredState: srv1alpha1.StateRunning, VirtualMachines: g.Spec.VirtualMachines}}
	require.NoError(t, c.Create(ctx, other))
	eventually(t, "the second group running", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil {
			return err
		}
		if other.Status.CurrentState != srv1alpha1.StateRunning {
			return fmt.Errorf("currentState %q", other.Status.CurrentState)
		}
		return nil
	})
	before := other.DeepCopy()
	other.Spec.Boot = g.Spec.Boot.DeepCopy()
	require.NoError(t, c.Patch(ctx, other, client.MergeFrom(before)))
	eventually(t, "the plan observed", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil {
			return err
		}
		if other.Status.ObservedGeneration != other.Generation {
			return fmt.Errorf("generation %d observed %d", other.Generation, other.Status.ObservedGeneration)
		}
		return nil
	})
	require.Nil(t, other.Status.Boot, "a plan added to a running group starts no boot")
	require.Equal(t, srv1alpha1.StateRunning, other.Status.CurrentState)
}
