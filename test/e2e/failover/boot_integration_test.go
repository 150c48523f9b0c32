package failover_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestBootPlanRunsOnFailoverAndStopsFailback: the group's boot plan, set on
// the quorum copy, reaches the workload copies through pg-sync and the
// target's pg-controller runs it. A planned failover starts vm-00's stage,
// then vm-01's once vm-00 is Ready, and the request records both stages and
// their times. With a gate that cannot pass (no guest agent answers) the
// failback stops at that stage: it fails at once with BootPlanStopped, vm-01
// never started on the primary, which is the active cluster again. The
// request ends within seconds of the 2s stage timeout, not after
// batchBootTimeoutSeconds=300 (waitPhase gives it 90s).
func TestBootPlanRunsOnFailoverAndStopsFailback(t *testing.T) {
	// VMs take a second to start, so each stage's gate passes in turn.
	z := newZone(t, zoneOptions{vms: 2, vmStartDelay: time.Second})
	db, web := env.AppNS+"/"+z.vms[0], env.AppNS+"/"+z.vms[1]
	z.setBootPlan(srv1alpha1.BootGate{Type: srv1alpha1.GateReady}, 60)

	fr := z.waitPhase(z.failover("to-dr", env.DR, srv1alpha1.FailoverPlanned), srv1alpha1.FailoverCompleted)
	require.NotNil(t, fr.Status.Boot, "the request copied the target's boot")
	dbStage, webStage := bootStage(t, fr.Status.Boot, "db"), bootStage(t, fr.Status.Boot, "web")
	require.Equal(t, srv1alpha1.StageSucceeded, dbStage.Phase)
	require.Equal(t, srv1alpha1.StageSucceeded, webStage.Phase)
	require.Equal(t, []string{db}, dbStage.VirtualMachines)
	require.Equal(t, []string{web}, webStage.VirtualMachines)
	require.NotNil(t, dbStage.CompletionTime)
	require.NotNil(t, webStage.VMsStartTime)
	require.False(t, webStage.VMsStartTime.Before(dbStage.CompletionTime), "web's VMs were asked to run once db's stage ended")
	last := fr.Status.PhaseTimings[len(fr.Status.PhaseTimings)-1]
	require.Equal(t, string(srv1alpha1.FailoverStartingOnTarget), last.Phase)
	// Each stage's time is its own, from its start to its end on the target.
	want := []srv1alpha1.StageTiming{}
	for _, st := range fr.Status.Boot.Stages {
		ms := int64(0)
		if st.StartTime != nil {
			ms = st.CompletionTime.Sub(st.StartTime.Time).Milliseconds()
		}
		want = append(want, srv1alpha1.StageTiming{Stage: st.Name, Milliseconds: ms, Phase: st.Phase})
	}
	require.Equal(t, want, last.Stages)
	z.assertActive(env.DR)
	z.assertLockReleased()

	// A gate no VM can pass: the failback's plan stops at db.
	z.setBootPlan(srv1alpha1.BootGate{Type: srv1alpha1.GateGuestAgent}, 2)
	fb := z.waitPhase(z.failover("back", env.Primary, srv1alpha1.FailoverPlanned), srv1alpha1.FailoverFailed)
	require.Equal(t, srv1alpha1.ReasonBootPlanStopped, readyReason(fb))
	for _, want := range []string{"stage db TimedOut", "not started, left stopped: " + web, "the group stays on " + env.Primary} {
		require.Contains(t, fb.Status.Message, want)
	}
	require.True(t, fb.Status.Boot.Stopped)
	q := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, z.Client(env.Quorum).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: group}, q))
	require.Equal(t, env.Primary, q.Spec.ActiveCluster)
	vm := &kubevirtv1.VirtualMachine{}
	require.NoError(t, z.Client(env.Primary).Get(z.ctx, types.NamespacedName{Namespace: env.AppNS, Name: z.vms[1]}, vm))
	require.Equal(t, kubevirtv1.RunStrategyHalted, *vm.Spec.RunStrategy, "the stopped plan never started vm-01")
	z.waitGroup(env.DR, srv1alpha1.StateStopped)
	z.assertLockReleased()
}

// setBootPlan gives the group a plan of two stages, vm-00 then vm-01, with
// the first stage's gate and timeout, and waits until pg-sync copied it to
// both workload copies.
func (z *zone) setBootPlan(gate srv1alpha1.BootGate, timeoutSeconds int32) {
	z.t.Helper()
	q := &srv1alpha1.ProtectionGroup{}
	require.NoError(z.t, z.Client(env.Quorum).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: group}, q))
	before := q.DeepCopy()
	q.Spec.Boot = &srv1alpha1.BootPlan{Stages: []srv1alpha1.BootStage{
		{Name: "db", VirtualMachines: []string{z.vms[0]}, Gate: gate, TimeoutSeconds: timeoutSeconds},
		{Name: "web", VirtualMachines: []string{z.vms[1]}, TimeoutSeconds: 60},
	}}
	require.NoError(z.t, z.Client(env.Quorum).Patch(z.ctx, q, client.MergeFrom(before)))
	for _, c := range []string{env.Primary, env.DR} {
		env.Eventually(z.t, timeout, "boot plan on "+c, func() error {
			pg := &srv1alpha1.ProtectionGroup{}
			if err := z.Client(c).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: group}, pg); err != nil {
				return err
			}
			if pg.Spec.Boot == nil || len(pg.Spec.Boot.Stages) != 2 || pg.Spec.Boot.Stages[0].Gate.Type != gate.Type {
				return fmt.Errorf("boot %+v", pg.Spec.Boot)
			}
			return nil
		})
	}
}

func bootStage(t *testing.T, b *srv1alpha1.BootStatus, name string) srv1alpha1.BootStageStatus {
	t.Helper()
	for _, s := range b.Stages {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no stage %s in %+v", name, b.Stages)
	return srv1alpha1.BootStageStatus{}
}
