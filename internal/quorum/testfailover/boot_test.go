package testfailover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/bootplan"
)

// TestTestPlanNamesTheTestVMs: a plan's "namespace/name" entry, written for
// production, names the test copy in the isolated namespace; a bare name
// already does, and an entry naming no group VM stays as written.
func TestTestPlanNamesTheTestVMs(t *testing.T) {
	g := &srv1alpha1.ProtectionGroup{}
	g.Spec.VirtualMachines = []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "db"}, {Namespace: "apps", Name: "web"}}
	g.Spec.Boot = &srv1alpha1.BootPlan{Stages: []srv1alpha1.BootStage{{Name: "db", VirtualMachines: []string{"apps/db", "web", "other/db"}}}}
	plan := testPlan(g, "sr-test-drill")
	require.Equal(t, []string{"sr-test-drill/db", "web", "other/db"}, plan.Stages[0].VirtualMachines)
	require.Equal(t, []string{"apps/db", "web", "other/db"}, g.Spec.Boot.Stages[0].VirtualMachines, "the group's plan is left as it is")
	require.Nil(t, testPlan(&srv1alpha1.ProtectionGroup{}, "sr-test-drill"))

	stages, err := bootplan.Stages(plan, []bootplan.VM{{Key: "sr-test-drill/db"}, {Key: "sr-test-drill/web"}})
	require.NoError(t, err)
	require.Equal(t, []string{"sr-test-drill/db", "sr-test-drill/web"}, stages[0].VMs)
	require.Equal(t, []string{"other/db"}, stages[0].Unknown)
}

// TestAStoppedPlanNamesItsStage: once a stage times out under Stop, a VM of a
// later stage was never started and says which stage stopped it, and the
// verdict's note names that stage; a plan that started every VM adds no note.
func TestAStoppedPlanNamesItsStage(t *testing.T) {
	plan := &srv1alpha1.BootPlan{OnStageTimeout: srv1alpha1.StageTimeoutStop, Stages: []srv1alpha1.BootStage{
		{Name: "db", VirtualMachines: []string{"db"}, TimeoutSeconds: 5},
		{Name: "web", VirtualMachines: []string{"web"}, TimeoutSeconds: 5},
	}}
	vms := []bootplan.VM{{Key: "ns/db"}, {Key: "ns/web"}}
	stages, err := bootplan.Stages(plan, vms)
	require.NoError(t, err)
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	facts := map[string]bootplan.Facts{"ns/db": {Exists: true}}
	out := bootplan.Advance(bootplan.Input{Plan: plan, Stages: stages, Facts: facts, Now: t0})
	require.NotNil(t, vmsStart(out.Status, "ns/db"))
	require.Nil(t, vmsStart(out.Status, "ns/web"))
	require.Equal(t, "boot stage db: waiting for the Ready gate: ns/db is not Ready", bootUnderWay(out.Status))

	out = bootplan.Advance(bootplan.Input{Plan: plan, Stages: stages, Facts: facts, Last: out.Status, Now: t0.Add(6 * time.Second)})
	require.Empty(t, bootUnderWay(out.Status))
	require.Nil(t, vmsStart(out.Status, "ns/web"))
	require.Equal(t, "not started: boot stage db did not succeed (TimedOut: timed out after 5s waiting for the Ready gate: ns/db is not Ready) and the plan's onStageTimeout is Stop",
		notStarted(out.Status, "ns/web"))
	require.Equal(t, "; the boot plan stopped at stage db (TimedOut)", bootStopped(out.Status))

	// Without a plan, every VM starts in the implicit stage: a timeout there
	// leaves no VM unstarted, and the verdict names no boot stage.
	stages, err = bootplan.Stages(nil, vms)
	require.NoError(t, err)
	out = bootplan.Advance(bootplan.Input{Stages: stages, Facts: facts, Now: t0})
	require.NotNil(t, vmsStart(out.Status, "ns/web"))
	out = bootplan.Advance(bootplan.Input{Stages: stages, Facts: facts, Last: out.Status, Now: t0.Add(time.Hour)})
	require.Equal(t, srv1alpha1.StageTimedOut, out.Status.Stages[0].Phase)
	require.Empty(t, bootStopped(out.Status))
}
