package drpc_test

import (
	"fmt"
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/kstatus"
	"github.com/siterecovery/siterecovery/test/sim/storagearray"
)

var globalVGR = drv1alpha1.GlobalVGRName(grID)

// TestGlobalVGRFlows runs the global VGR flows end to end on three real API servers:
// enable (app-1, app-2 sharing one replication group), failover with the
// consensus gate, app-3 joining later, a mismatched preferredCluster that
// never reaches consensus, and disable. The workload clusters run the real VRG
// controller (internal/workload/vrg) and a storage array simulator. Relocate is
// TestGlobalVGRRelocate. quorum-manager reaches the workload clusters as the
// workload chart's quorum identity (minted kubeconfigs, the guard policy
// installed), so the DRPC flows' rights on the workload clusters are proven:
// creating a VRG by server-side apply needs create besides patch.
func TestGlobalVGRFlows(t *testing.T) {
	z := newZoneOn(t, env.Options{MintedKubeconfigs: true}, env.OffloadedZone{Policy: policyName})
	P, D := env.Primary, env.DR

	// Enable: both apps deploy on the primary; the label flows from the
	// primary VRG to the DRPC and from there to the secondary VRG.
	z.addApp("app-1", P)
	z.addApp("app-2", P)
	for _, app := range []string{"app-1", "app-2"} {
		z.requireDeployed(app, P, D)
		v, err := z.vrg(D, app)
		require.NoError(t, err)
		require.Equal(t, drv1alpha1.Secondary, v.Spec.ReplicationState)
		require.Equal(t, "0m", v.Spec.Async.SchedulingInterval)
		require.Len(t, v.Spec.Async.PeerClasses, 1, "the VRG carries the policy's peer classes")
	}
	requireVGR(z, P, replicationv1alpha1.Primary)
	requireNoVGR(z, D, "a secondary cluster gets its VGR only when it becomes primary")
	// Monitoring: storage that replicates on its own (0m) reports no sync
	// time; the group is healthy and ready while its DRPC says protected.
	env.Eventually(t, timeout, "ReplicationGroupStatus of an Offloaded group", func() error {
		st := &srv1alpha1.ReplicationGroupStatus{}
		if err := z.Client(env.Quorum).Get(ctx, keyOf("app-1"), st); err != nil {
			return err
		}
		if st.Status.Health != srv1alpha1.HealthHealthy || !st.Status.FailoverReady || st.Status.MaxLagSeconds != 0 {
			return fmt.Errorf("status %+v", st.Status)
		}
		return nil
	})

	// Failover: app-1 first waits for app-2; the applications keep running.
	failover := func(d *drv1alpha1.DRPlacementControl) {
		d.Spec.Action, d.Spec.FailoverCluster = drv1alpha1.ActionFailover, D
	}
	z.updateDRPC("app-1", failover)
	waitBlocked(z, "app-1", fmt.Sprintf("Expected Failover to %s, pending: %s/app-2", D, env.Namespace))
	// kubectl wait, Argo CD and Flux see a DRPC waiting for its peers as in
	// progress, not as done or failed.
	kstatus.Wait(t, z.Client(env.Quorum), &drv1alpha1.DRPlacementControl{}, keyOf("app-1"), status.InProgressStatus, timeout)
	z.requireRunsOn("app-1", P, D)
	z.updateDRPC("app-2", failover)
	for _, app := range []string{"app-1", "app-2"} {
		z.waitDRPC(app, drv1alpha1.DRStateFailedOver, D)
		z.requireRunsOn(app, D, P)
		requireReached(z, app, "Consensus reached for action Failover")
		requireVRGs(z, app, D, P)
		require.NotNil(t, z.drpc(app).Status.ActionDuration)
		// Failed over and settled: the DRPC and both VRGs are Current.
		kstatus.Wait(t, z.Client(env.Quorum), &drv1alpha1.DRPlacementControl{}, keyOf(app), status.CurrentStatus, timeout)
		for _, c := range []string{D, P} {
			kstatus.Wait(t, z.Client(c), &drv1alpha1.VolumeReplicationGroup{}, client.ObjectKey{Namespace: env.AppNS, Name: app}, status.CurrentStatus, timeout)
		}
	}
	// The DR cluster's VGR is created on promotion; the reachable old primary is
	// cleaned up to secondary once both applications stopped there.
	requireVGR(z, D, replicationv1alpha1.Primary)
	requireVGR(z, P, replicationv1alpha1.Secondary)

	// app-3 joins the replication group later, on the cluster the others run on.
	z.addApp("app-3", D)
	z.waitDRPC("app-3", drv1alpha1.DRStateDeployed, D)
	env.Eventually(t, timeout, "app-3 labelled everywhere", func() error { return labelledEverywhere(z, "app-3") })

	// Mismatch: every DRPC asks for Relocate, app-1 to another cluster
	// than the others (which stay where they run); it never reaches consensus,
	// app-3 included, and every application keeps running; correcting it
	// clears the block.
	z.updateDRPC("app-2", relocate(D))
	z.updateDRPC("app-3", relocate(D))
	z.updateDRPC("app-1", relocate(P))
	waitBlocked(z, "app-1", fmt.Sprintf("Expected Relocate to %s, pending: %s/app-2, %s/app-3", P, env.Namespace, env.Namespace))
	consistently(t, 2*time.Second, "app-1 stays blocked", func() error {
		if p := z.drpc("app-1").Status.Progression; p != drv1alpha1.ProgressionWaitOnGlobalAction {
			return fmt.Errorf("progression %s", p)
		}
		return nil
	})
	for _, app := range []string{"app-1", "app-2", "app-3"} {
		z.requireRunsOn(app, D, P)
	}
	z.updateDRPC("app-1", relocate(D))
	z.waitDRPC("app-1", drv1alpha1.DRStateRelocated, D)
	requireReached(z, "app-1", "Consensus reached for action Relocate")

	require.Empty(t, z.safety.Violations(), "storage turned secondary under a running VM, or a VM booted on secondary storage")

	// Disable: deleting a DRPC deletes its VRGs on both clusters and its
	// metric; the other applications keep theirs.
	require.NoError(t, z.Client(env.Quorum).Delete(ctx, z.drpc("app-1")))
	env.Eventually(t, timeout, "app-1 finalized", func() error {
		for _, c := range []string{P, D} {
			if _, err := z.vrg(c, "app-1"); !apierrors.IsNotFound(err) {
				return fmt.Errorf("VRG on %s: %w", c, err)
			}
		}
		if _, ok := consensusMetric(t, "app-1"); ok {
			return fmt.Errorf("metric of app-1 still exported")
		}
		d := &drv1alpha1.DRPlacementControl{}
		if err := z.Client(env.Quorum).Get(ctx, keyOf("app-1"), d); !apierrors.IsNotFound(err) {
			return fmt.Errorf("DRPC still there: %w", err)
		}
		return nil
	})
	for _, app := range []string{"app-2", "app-3"} {
		requireVRGs(z, app, D, P)
		z.requireRunsOn(app, D, P)
	}
	z.requireRunsOn("app-1", D, P)
	// The shared VGRs outlive app-1's VRGs: app-2 and app-3 still use them.
	requireVGR(z, D, replicationv1alpha1.Primary)
	requireVGR(z, P, replicationv1alpha1.Secondary)
	require.Empty(t, z.safety.Violations())
	for _, c := range []string{P, D} {
		for _, kind := range []string{"VRG", "VGR", "VMI"} {
			require.NotZero(t, z.safety.Recorded(c, kind), "the safety recorder saw no %s on %s", kind, c)
		}
	}
}

// TestGlobalVGRRelocate runs a global group's Relocate with three applications: the first
// two wait for the third, then all move to the DR cluster (whose VGR is
// created) and back (whose VGR is promoted).
func TestGlobalVGRRelocate(t *testing.T) {
	z := newZone(t)
	P, D := env.Primary, env.DR
	for _, app := range []string{"app-1", "app-2", "app-3"} {
		z.addApp(app, P)
		z.requireDeployed(app, P, D)
	}
	z.updateDRPC("app-1", relocate(D))
	z.updateDRPC("app-2", relocate(D))
	waitBlocked(z, "app-1", fmt.Sprintf("Expected Relocate to %s, pending: %s/app-3", D, env.Namespace))
	z.requireRunsOn("app-2", P, D)
	for _, move := range []struct{ from, to string }{{P, D}, {D, P}} {
		for _, app := range []string{"app-1", "app-2", "app-3"} {
			z.updateDRPC(app, relocate(move.to))
		}
		for _, app := range []string{"app-1", "app-2", "app-3"} {
			z.waitRelocated(app, move.from, move.to)
			z.requireRunsOn(app, move.to, move.from)
			requireReached(z, app, "Consensus reached for action Relocate")
			requireVRGs(z, app, move.to, move.from)
		}
		requireVGR(z, move.to, replicationv1alpha1.Primary)
		requireVGR(z, move.from, replicationv1alpha1.Secondary)
	}
	require.Empty(t, z.safety.Violations(), "storage turned secondary under a running VM, or a VM booted on secondary storage")
}

func relocate(to string) func(d *drv1alpha1.DRPlacementControl) {
	return func(d *drv1alpha1.DRPlacementControl) {
		d.Spec.Action, d.Spec.PreferredCluster = drv1alpha1.ActionRelocate, to
	}
}

// requireDeployed waits for an application to be deployed on one cluster,
// labelled, protected and peer ready.
func (z *zone) requireDeployed(app, on, off string) {
	z.t.Helper()
	z.waitDRPC(app, drv1alpha1.DRStateDeployed, on)
	z.requireRunsOn(app, on, off)
	env.Eventually(z.t, timeout, app+" labelled everywhere", func() error { return labelledEverywhere(z, app) })
	env.Eventually(z.t, timeout, app+" protected and peer ready", func() error {
		d := z.drpc(app)
		for _, c := range []string{drv1alpha1.ConditionProtected, drv1alpha1.ConditionPeerReady, drv1alpha1.ConditionAvailable} {
			if condition(d, c).Status != metav1.ConditionTrue {
				return fmt.Errorf("%s: %+v", c, condition(d, c))
			}
		}
		if d.Status.LastGroupSyncTime != nil {
			return fmt.Errorf("lastGroupSyncTime %v with schedulingInterval 0m", d.Status.LastGroupSyncTime)
		}
		return nil
	})
}

func labelledEverywhere(z *zone, app string) error {
	if l := z.drpc(app).Labels[drv1alpha1.GlobalVGRLabel]; l != globalVGR {
		return fmt.Errorf("DRPC label %q", l)
	}
	for _, c := range []string{env.Primary, env.DR} {
		v, err := z.vrg(c, app)
		if err != nil {
			return err
		}
		if v.Labels[drv1alpha1.GlobalVGRLabel] != globalVGR {
			return fmt.Errorf("VRG on %s labels %v", c, v.Labels)
		}
	}
	return nil
}

func waitBlocked(z *zone, app, message string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, app+" waiting on global action", func() error {
		d := z.drpc(app)
		c := condition(d, drv1alpha1.ConditionGlobalAction)
		if d.Status.Progression != drv1alpha1.ProgressionWaitOnGlobalAction || c.Status != metav1.ConditionFalse ||
			c.Reason != drv1alpha1.ReasonConsensusNotReached || c.Message != message {
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
	c := condition(z.drpc(app), drv1alpha1.ConditionGlobalAction)
	require.Equal(z.t, metav1.ConditionTrue, c.Status)
	require.Equal(z.t, drv1alpha1.ReasonConsensusReached, c.Reason)
	require.Equal(z.t, message, c.Message)
	// The metric is published right after the status write, so a scrape may
	// still see the previous value for a moment.
	env.Eventually(z.t, timeout, app+" consensus metric", func() error {
		if v, ok := consensusMetric(z.t, app); !ok || v != 1 {
			return fmt.Errorf("consensus metric %v %v", v, ok)
		}
		return nil
	})
}

// requireVRGs checks the VRG is primary (and reports it) on one cluster and
// secondary on the other.
func requireVRGs(z *zone, app, primary, secondary string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, app+" VRGs", func() error {
		for c, want := range map[string]drv1alpha1.State{primary: drv1alpha1.PrimaryState, secondary: drv1alpha1.SecondaryState} {
			v, err := z.vrg(c, app)
			if err != nil {
				return err
			}
			if v.Status.State != want || v.Labels[drv1alpha1.GlobalVGRLabel] != globalVGR {
				return fmt.Errorf("VRG on %s: state %s labels %v", c, v.Status.State, v.Labels)
			}
		}
		return nil
	})
}

// requireVGR waits for the global VGR on a cluster to be asked for a state and
// to report it.
func requireVGR(z *zone, cluster string, want replicationv1alpha1.ReplicationState) {
	z.t.Helper()
	env.Eventually(z.t, timeout, fmt.Sprintf("global VGR %s on %s", want, cluster), func() error {
		v, err := z.vgr(cluster)
		if err != nil {
			return err
		}
		if v.Spec.ReplicationState != want || v.Status.State != storagearray.StateFor(want) {
			return fmt.Errorf("spec %s, status %q", v.Spec.ReplicationState, v.Status.State)
		}
		return nil
	})
}

func requireNoVGR(z *zone, cluster, why string) {
	z.t.Helper()
	_, err := z.vgr(cluster)
	require.True(z.t, apierrors.IsNotFound(err), "%s: %v", why, err)
}
