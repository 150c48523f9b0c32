package failover_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestFailoverFollowsBootPlanAndStopsWithIt: while the request starts the
// group on the target, it copies the target copy's boot, stage by stage;
// when the target reports the plan stopped, the request fails at once (well
// within batchBootTimeoutSeconds=300), naming the stage and the VM that did
// not pass its gate, with the target left active and the source stopped,
// and phaseTimings splits StartingOnTarget across the stages.
//
// The target's boot status is written by the test, as the target's
// pg-controller reports a plan it runs: that pg-controller is stopped once
// the target is promoted, so that the boot the request sees is exactly the
// one written here.
func TestFailoverFollowsBootPlanAndStopsWithIt(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 2, drStartDelay: time.Hour})
	name := z.failover("boot-plan", env.DR, srv1alpha1.FailoverPlanned)
	z.waitPhase(name, srv1alpha1.FailoverStartingOnTarget)
	// newZone starts the primary's pg-controller and agent, then the DR's.
	z.workload[2].Stop(t)

	db, web := env.AppNS+"/"+z.vms[0], env.AppNS+"/"+z.vms[1]
	t0 := time.Now().Truncate(time.Second)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: t0.Add(d)} }
	boot := &srv1alpha1.BootStatus{StartTime: at(0), Stages: []srv1alpha1.BootStageStatus{
		{Name: "db", Phase: srv1alpha1.StageSucceeded, VirtualMachines: []string{db}, StartTime: at(0), VMsStartTime: at(0), CompletionTime: at(4 * time.Second)},
		{Name: "web", Phase: srv1alpha1.StageStarting, VirtualMachines: []string{web}, Waiting: []string{web},
			StartTime: at(4 * time.Second), VMsStartTime: at(4 * time.Second), Message: "waiting for " + web + " to pass the TCP gate on port 8080"},
	}}
	z.reportBoot(boot)
	env.Eventually(t, timeout, "the request copies the boot under way", func() error {
		fr := z.request(name)
		if !equality.Semantic.DeepEqual(fr.Status.Boot, boot) {
			return fmt.Errorf("boot %+v; message %s", fr.Status.Boot, fr.Status.Message)
		}
		return nil
	})
	fr := z.request(name)
	require.Equal(t, srv1alpha1.FailoverStartingOnTarget, fr.Status.Phase)
	require.Contains(t, fr.Status.Message, "boot stage web (2/2) Starting: waiting for "+web+" to pass the TCP gate on port 8080")

	stopped := boot.DeepCopy()
	stopped.Stages[1].Phase, stopped.Stages[1].CompletionTime = srv1alpha1.StageTimedOut, at(34*time.Second)
	stopped.Stages[1].Message = "timed out after 30s waiting for " + web + " to pass the TCP gate on port 8080"
	stopped.Stopped, stopped.CompletionTime = true, at(34*time.Second)
	z.reportBoot(stopped)
	fr = z.waitPhase(name, srv1alpha1.FailoverFailed)
	require.Equal(t, srv1alpha1.ReasonBootPlanStopped, readyReason(fr))
	for _, want := range []string{"stage web TimedOut (timed out after 30s", "started but did not pass the gate: " + web,
		"the group stays on " + env.DR, "set spec.boot.onStageTimeout: Continue"} {
		require.Contains(t, fr.Status.Message, want)
	}
	require.True(t, equality.Semantic.DeepEqual(stopped, fr.Status.Boot), "boot %+v", fr.Status.Boot)
	last := fr.Status.PhaseTimings[len(fr.Status.PhaseTimings)-1]
	require.Equal(t, string(srv1alpha1.FailoverStartingOnTarget), last.Phase)
	require.Equal(t, []srv1alpha1.StageTiming{
		{Stage: "db", Milliseconds: 4000, Phase: srv1alpha1.StageSucceeded},
		{Stage: "web", Milliseconds: 30000, Phase: srv1alpha1.StageTimedOut},
	}, last.Stages)

	q := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, z.Client(env.Quorum).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: group}, q))
	require.Equal(t, env.DR, q.Spec.ActiveCluster, "the target is the active cluster")
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, z.Client(env.DR).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: group}, pg))
	require.Equal(t, srv1alpha1.StateRunning, pg.Spec.DesiredState, "the target stays asked to run")
	z.waitGroup(env.Primary, srv1alpha1.StateStopped)
	z.assertLockReleased()
}

// reportBoot writes the DR copy's status as its pg-controller reports a boot
// under way: the spec observed, the group starting.
func (z *zone) reportBoot(boot *srv1alpha1.BootStatus) {
	z.t.Helper()
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(z.t, z.Client(env.DR).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, pg))
	pg.Status.ObservedGeneration = pg.Generation
	pg.Status.CurrentState = srv1alpha1.StateStarting
	pg.Status.Boot = boot.DeepCopy()
	require.NoError(z.t, z.Client(env.DR).Status().Update(z.ctx, pg))
}
