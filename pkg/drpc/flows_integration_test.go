package drpc_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ramenv1alpha1 "github.com/siterecovery/siterecovery/apis/ramendr/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

var globalVGR = ramenv1alpha1.GlobalVGRName(grID)

// TestGlobalVGRFlows runs spec 000 §6 end to end on three real API servers:
// enable (app-1, app-2 sharing one replication group), failover with the
// consensus gate, app-3 joining later, relocate, a mismatched preferredCluster
// that never reaches consensus, and disable. The workload-side VRG controller
// and the storage array are played by fakeVRG.
func TestGlobalVGRFlows(t *testing.T) {
	z := newZone(t, true)
	P, D := env.Primary, env.DR

	// §6.1 enable: both apps deploy on the primary; the label flows from the
	// primary VRG to the DRPC and from there to the secondary VRG.
	z.addApp("app-1", P, true)
	z.addApp("app-2", P, true)
	for _, app := range []string{"app-1", "app-2"} {
		z.waitDRPC(app, ramenv1alpha1.DRStateDeployed, ramenv1alpha1.ProgressionCompleted, P)
		z.requireRunsOn(app, P, D)
		env.Eventually(t, timeout, app+" labelled everywhere", func() error { return labelledEverywhere(z, app) })
		env.Eventually(t, timeout, app+" protected and peer ready", func() error {
			d := z.drpc(app)
			for _, c := range []string{ramenv1alpha1.ConditionProtected, ramenv1alpha1.ConditionPeerReady, ramenv1alpha1.ConditionAvailable} {
				if condition(d, c).Status != metav1.ConditionTrue {
					return fmt.Errorf("%s: %+v", c, condition(d, c))
				}
			}
			if d.Status.LastGroupSyncTime != nil {
				return fmt.Errorf("lastGroupSyncTime %v with schedulingInterval 0m", d.Status.LastGroupSyncTime)
			}
			return nil
		})
		v, err := z.vrg(D, app)
		require.NoError(t, err)
		require.Equal(t, ramenv1alpha1.Secondary, v.Spec.ReplicationState)
		require.Equal(t, "0m", v.Spec.Async.SchedulingInterval)
		require.Len(t, v.Spec.Async.PeerClasses, 1, "the VRG carries the policy's peer classes")
	}

	// §6.2 failover: app-1 first waits for app-2; the applications keep running.
	failover := func(d *ramenv1alpha1.DRPlacementControl) {
		d.Spec.Action, d.Spec.FailoverCluster = ramenv1alpha1.ActionFailover, D
	}
	z.updateDRPC("app-1", failover)
	waitBlocked(z, "app-1", fmt.Sprintf("Expected Failover to %s, pending: %s/app-2", D, env.Namespace))
	z.requireRunsOn("app-1", P, D)
	z.updateDRPC("app-2", failover)
	for _, app := range []string{"app-1", "app-2"} {
		z.waitDRPC(app, ramenv1alpha1.DRStateFailedOver, ramenv1alpha1.ProgressionCompleted, D)
		z.requireRunsOn(app, D, P)
		requireReached(z, app, "Consensus reached for action Failover")
		requireVRGs(z, app, D, P)
		require.NotNil(t, z.drpc(app).Status.ActionDuration)
	}

	// app-3 joins the replication group later, on the cluster the others run on.
	z.addApp("app-3", D, true)
	z.waitDRPC("app-3", ramenv1alpha1.DRStateDeployed, ramenv1alpha1.ProgressionCompleted, D)
	env.Eventually(t, timeout, "app-3 labelled everywhere", func() error { return labelledEverywhere(z, "app-3") })

	// §6.3 relocate back: app-3 must agree too.
	relocate := func(to string) func(d *ramenv1alpha1.DRPlacementControl) {
		return func(d *ramenv1alpha1.DRPlacementControl) {
			d.Spec.Action, d.Spec.PreferredCluster = ramenv1alpha1.ActionRelocate, to
		}
	}
	z.updateDRPC("app-1", relocate(P))
	z.updateDRPC("app-2", relocate(P))
	waitBlocked(z, "app-1", fmt.Sprintf("Expected Relocate to %s, pending: %s/app-3", P, env.Namespace))
	z.requireRunsOn("app-2", D, P)
	z.updateDRPC("app-3", relocate(P))
	for _, app := range []string{"app-1", "app-2", "app-3"} {
		z.waitDRPC(app, ramenv1alpha1.DRStateRelocated, ramenv1alpha1.ProgressionCompleted, P)
		z.requireRunsOn(app, P, D)
		requireVRGs(z, app, P, D)
	}

	// §5.1 mismatch: app-1 asks for another cluster and never reaches consensus;
	// every application keeps running; correcting it clears the block.
	z.updateDRPC("app-1", relocate(D))
	waitBlocked(z, "app-1", fmt.Sprintf("Expected Relocate to %s, pending: %s/app-2, %s/app-3", D, env.Namespace, env.Namespace))
	time.Sleep(2 * time.Second)
	require.Equal(t, ramenv1alpha1.ProgressionWaitOnGlobalAction, z.drpc("app-1").Status.Progression)
	for _, app := range []string{"app-1", "app-2", "app-3"} {
		z.requireRunsOn(app, P, D)
	}
	z.updateDRPC("app-1", relocate(P))
	z.waitDRPC("app-1", ramenv1alpha1.DRStateRelocated, ramenv1alpha1.ProgressionCompleted, P)
	requireReached(z, "app-1", "Consensus reached for action Relocate")

	for c, f := range z.vrgs {
		require.Empty(t, f.Violations(), "a VRG on %s became secondary before its application stopped", c)
	}

	// §6.4 disable: deleting a DRPC deletes its VRGs on both clusters and its
	// metric; the other applications keep theirs.
	require.NoError(t, z.Client(env.Quorum).Delete(ctx, z.drpc("app-1")))
	env.Eventually(t, timeout, "app-1 finalized", func() error {
		for _, c := range []string{P, D} {
			if _, err := z.vrg(c, "app-1"); !apierrors.IsNotFound(err) {
				return fmt.Errorf("VRG on %s: %v", c, err)
			}
		}
		if _, ok := consensusMetric(t, "app-1"); ok {
			return fmt.Errorf("metric of app-1 still exported")
		}
		d := &ramenv1alpha1.DRPlacementControl{}
		if err := z.Client(env.Quorum).Get(ctx, keyOf("app-1"), d); !apierrors.IsNotFound(err) {
			return fmt.Errorf("DRPC still there: %v", err)
		}
		return nil
	})
	for _, app := range []string{"app-2", "app-3"} {
		requireVRGs(z, app, P, D)
		z.requireRunsOn(app, P, D)
	}
	z.requireRunsOn("app-1", P, D)
}

func labelledEverywhere(z *zone, app string) error {
	if l := z.drpc(app).Labels[ramenv1alpha1.GlobalVGRLabel]; l != globalVGR {
		return fmt.Errorf("DRPC label %q", l)
	}
	for _, c := range []string{env.Primary, env.DR} {
		v, err := z.vrg(c, app)
		if err != nil {
			return err
		}
		if v.Labels[ramenv1alpha1.GlobalVGRLabel] != globalVGR {
			return fmt.Errorf("VRG on %s labels %v", c, v.Labels)
		}
	}
	return nil
}

func waitBlocked(z *zone, app, message string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, app+" waiting on global action", func() error {
		d := z.drpc(app)
		c := condition(d, ramenv1alpha1.ConditionGlobalAction)
		if d.Status.Progression != ramenv1alpha1.ProgressionWaitOnGlobalAction || c.Status != metav1.ConditionFalse ||
			c.Reason != ramenv1alpha1.ReasonConsensusNotReached || c.Message != message {
			return fmt.Errorf("progression %s, GlobalAction %+v", d.Status.Progression, c)
		}
		if v, ok := consensusMetric(z.t, app); !ok || v != 0 {
			return fmt.Errorf("consensus metric %v %v", v, ok)
		}
		return nil
	})
}

func requireReached(z *zone, app, message string) {
	z.t.Helper()
	c := condition(z.drpc(app), ramenv1alpha1.ConditionGlobalAction)
	require.Equal(z.t, metav1.ConditionTrue, c.Status)
	require.Equal(z.t, ramenv1alpha1.ReasonConsensusReached, c.Reason)
	require.Equal(z.t, message, c.Message)
	v, ok := consensusMetric(z.t, app)
	require.True(z.t, ok)
	require.Equal(z.t, 1.0, v)
}

// requireVRGs checks the VRG is primary (and reports it) on one cluster and
// secondary on the other.
func requireVRGs(z *zone, app, primary, secondary string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, app+" VRGs", func() error {
		for c, want := range map[string]ramenv1alpha1.State{primary: ramenv1alpha1.PrimaryState, secondary: ramenv1alpha1.SecondaryState} {
			v, err := z.vrg(c, app)
			if err != nil {
				return err
			}
			if v.Status.State != want || v.Labels[ramenv1alpha1.GlobalVGRLabel] != globalVGR {
				return fmt.Errorf("VRG on %s: state %s labels %v", c, v.Status.State, v.Labels)
			}
		}
		return nil
	})
}
