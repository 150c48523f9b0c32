package failover_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/failover"
	"github.com/siterecovery/siterecovery/internal/workload/vrg"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/sim/storagearray"
)

const (
	offloadedPolicy  = "offloaded-0m"
	offloadedGroupID = "replication-group-01"
	offloadedClass   = "sc-block"
)

// TestOffloadedFailoverViaDRPC: on an Offloaded zone a group without a DRPC
// fails at once, and a planned FailoverRequest moves the group through its
// DRPlacementControl (Relocate to the target), completing once the DRPC has
// relocated.
func TestOffloadedFailoverViaDRPC(t *testing.T) {
	z := newOffloadedZone(t)

	// A group without a DRPC.
	z.addGroup("app-2")
	fr := z.waitEnd(z.request("app-2-to-dr", "app-2", env.DR, srv1alpha1.FailoverPlanned))
	require.Equal(t, srv1alpha1.FailoverFailed, fr.Status.Phase)
	require.Equal(t, failover.ReasonNoDRPlacementControl, meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady).Reason)
	require.Contains(t, fr.Status.Message, "create one")
	require.Equal(t, env.Primary, z.quorumGroup("app-2").Spec.ActiveCluster)

	// A group with a DRPC deployed on the primary.
	z.addGroup("app-1", "app-1-drpc")
	z.waitDRPC("app-1-drpc", drv1alpha1.DRStateDeployed, env.Primary)
	fr = z.waitEnd(z.request("app-1-to-dr", "app-1", env.DR, srv1alpha1.FailoverPlanned))
	require.Equal(t, srv1alpha1.FailoverCompleted, fr.Status.Phase, fr.Status.Message)
	require.Equal(t, env.Primary, fr.Status.SourceCluster)
	d := z.drpc("app-1-drpc")
	require.Equal(t, drv1alpha1.ActionRelocate, d.Spec.Action)
	require.Equal(t, env.DR, d.Spec.PreferredCluster)
	require.Equal(t, drv1alpha1.DRStateRelocated, d.Status.Phase)
	require.Equal(t, env.DR, d.Status.PreferredDecision.ClusterName)
	require.True(t, meta.IsStatusConditionTrue(fr.Status.Conditions, srv1alpha1.ConditionReady))
	require.NotNil(t, meta.FindStatusCondition(fr.Status.Conditions, failover.ConditionDRPlacementControl))
	trail := phases(fr)
	require.Equal(t, "Pending", trail[0])
	require.Equal(t, "StoppingOnSource", trail[1])
	require.Equal(t, "Completed", trail[len(trail)-1])
	t.Logf("audit trail: %v", trail)
	require.Equal(t, env.DR, z.quorumGroup("app-1").Spec.ActiveCluster)
	z.requireRunsOn("app-1", env.DR, env.Primary)
	require.Empty(t, z.safety.Violations())
}

// TestOffloadedUnplannedFailoverViaDRPC: an unplanned FailoverRequest sets the
// group's DRPC to Failover to the target and completes once the application
// runs there, with the source up (cleaned up at once) and with the source's
// API server down (cleaned up when it returns); a group named by two DRPCs
// fails at once.
func TestOffloadedUnplannedFailoverViaDRPC(t *testing.T) {
	z := newOffloadedZone(t)
	P, D := env.Primary, env.DR
	z.addGroup("app-1", "app-1-drpc")
	z.waitDRPC("app-1-drpc", drv1alpha1.DRStateDeployed, P)

	// Both clusters up.
	fr := z.waitEnd(z.request("to-dr", "app-1", D, srv1alpha1.FailoverUnplanned))
	z.requireFailedOver(fr, P, D)
	z.requireVGR(D, replicationv1alpha1.Primary)
	z.requireCleanedUp(P)

	// The application's cluster, now the DR cluster, loses its API server.
	require.NoError(t, z.Clusters[D].StopAPIServer())
	fr = z.waitEnd(z.request("back-to-primary", "app-1", P, srv1alpha1.FailoverUnplanned))
	z.requireFailedOver(fr, D, P)
	z.requireVGR(P, replicationv1alpha1.Primary)
	require.Equal(t, drv1alpha1.ProgressionCleaningUp, z.drpc("app-1-drpc").Status.Progression,
		"the old primary is cleaned up only once it is back")
	require.NoError(t, z.Clusters[D].StartAPIServer())
	z.requireCleanedUp(D)
	require.Empty(t, z.safety.Violations())

	// Two DRPCs naming one group.
	z.addGroup("app-2", "app-2-a", "app-2-b")
	fr = z.waitEnd(z.request("ambiguous", "app-2", D, srv1alpha1.FailoverUnplanned))
	require.Equal(t, srv1alpha1.FailoverFailed, fr.Status.Phase)
	require.Equal(t, failover.ReasonManyDRPlacementControls, meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady).Reason)
	require.Contains(t, fr.Status.Message, "app-2-a")
	require.Contains(t, fr.Status.Message, "app-2-b")
	require.Equal(t, P, z.quorumGroup("app-2").Spec.ActiveCluster)
	for _, name := range []string{"app-2-a", "app-2-b"} {
		require.Empty(t, z.drpc(name).Spec.Action, "a failed request leaves %s alone", name)
	}
}

// offloadedZone is an Offloaded zone: on each workload cluster pg-controller
// with the real VRG controller and a storage array simulator, and one global
// replication group's storage; quorum-manager and a DRPolicy.
type offloadedZone struct {
	*env.Env
	t      *testing.T
	ctx    context.Context
	safety *env.Safety
}

func newOffloadedZone(t *testing.T) *offloadedZone {
	z := &offloadedZone{Env: env.New(t, env.Options{Backend: srv1alpha1.BackendOffloaded}), t: t, ctx: context.Background()}
	z.safety, _ = z.StartOffloaded(t, env.OffloadedZone{ArrayDelay: 100 * time.Millisecond, StorageClass: offloadedClass,
		ReplicationClass: "offloaded-vgrc", GroupReplicationID: offloadedGroupID, Policy: offloadedPolicy})
	return z
}

func (z *offloadedZone) create(cluster string, obj client.Object) {
	z.t.Helper()
	require.NoError(z.t, z.Client(cluster).Create(z.ctx, obj))
}

// addGroup creates an application active on the primary (its PVC on both
// clusters, its VM running there and halted on the DR cluster), its group and
// a DRPC of each name.
func (z *offloadedZone) addGroup(name string, drpcs ...string) {
	for _, c := range []string{env.Primary, env.DR} {
		z.CreateAppPVC(z.t, c, name, offloadedClass)
	}
	z.create(env.Primary, env.AppVM(name, kubevirtv1.RunStrategyAlways))
	// Created before the group, as after protection: a standby VM pg-sync
	// creates with the copy can leave the copy's currentState stale.
	z.create(env.DR, env.AppVM(name, kubevirtv1.RunStrategyHalted))
	z.create(env.Quorum, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: env.AppNS, Name: env.AppVMName(name)}},
			ActiveCluster: env.Primary, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}}})
	for _, d := range drpcs {
		z.create(env.Quorum, &drv1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: d},
			Spec: drv1alpha1.DRPlacementControlSpec{
				ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: name},
				DRPolicyRef:        srv1alpha1.LocalObjectReference{Name: offloadedPolicy},
				PVCSelector:        metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				PreferredCluster:   env.Primary,
			}})
	}
}

func (z *offloadedZone) drpc(name string) *drv1alpha1.DRPlacementControl {
	z.t.Helper()
	d := &drv1alpha1.DRPlacementControl{}
	require.NoError(z.t, z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, d))
	return d
}

// waitDRPC waits for a DRPC to settle in a phase on a cluster, protected.
func (z *offloadedZone) waitDRPC(name string, phase drv1alpha1.DRState, cluster string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, name+" "+string(phase)+" on "+cluster, func() error {
		d := z.drpc(name)
		if d.Status.Phase != phase || d.Status.Progression != drv1alpha1.ProgressionCompleted || d.Status.PreferredDecision.ClusterName != cluster {
			return fmt.Errorf("phase %s progression %s on %q", d.Status.Phase, d.Status.Progression, d.Status.PreferredDecision.ClusterName)
		}
		// Deployed does not wait for the data: a failover before it is
		// protected would leave the source without a VGR to clean up.
		if c := meta.FindStatusCondition(d.Status.Conditions, drv1alpha1.ConditionProtected); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("not protected: %+v", c)
		}
		return nil
	})
}

func (z *offloadedZone) quorumGroup(name string) *srv1alpha1.ProtectionGroup {
	z.t.Helper()
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(z.t, z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, g))
	return g
}

func (z *offloadedZone) request(name, group, target string, kind srv1alpha1.FailoverType) string {
	z.create(env.Quorum, &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group, Namespace: env.Namespace},
			TargetCluster: target, FailoverType: kind, DrainTimeoutSeconds: 120, BatchBootTimeoutSeconds: 300}})
	return name
}

func (z *offloadedZone) getRequest(name string) (*srv1alpha1.FailoverRequest, error) {
	fr := &srv1alpha1.FailoverRequest{}
	return fr, z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, fr)
}

func (z *offloadedZone) waitEnd(name string) *srv1alpha1.FailoverRequest {
	z.t.Helper()
	var fr *srv1alpha1.FailoverRequest
	env.Eventually(z.t, timeout, name+" finished", func() error {
		var err error
		if fr, err = z.getRequest(name); err != nil {
			return err
		}
		if !terminalPhase(fr.Status.Phase) {
			return fmt.Errorf("phase %s: %s", fr.Status.Phase, fr.Status.Message)
		}
		return nil
	})
	return fr
}

func terminalPhase(p srv1alpha1.FailoverPhase) bool {
	return p == srv1alpha1.FailoverCompleted || p == srv1alpha1.FailoverFailed
}

// requireFailedOver checks a completed unplanned request and the DRPC it drove.
func (z *offloadedZone) requireFailedOver(fr *srv1alpha1.FailoverRequest, from, to string) {
	z.t.Helper()
	require.Equal(z.t, srv1alpha1.FailoverCompleted, fr.Status.Phase, fr.Status.Message)
	require.Equal(z.t, from, fr.Status.SourceCluster)
	risk := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionDataLossRisk)
	require.NotNil(z.t, risk, "an unplanned failover records that writes may be lost")
	require.Equal(z.t, metav1.ConditionTrue, risk.Status)
	require.Contains(z.t, risk.Message, "Offloaded")
	trail := phases(fr)
	require.Equal(z.t, "Pending", trail[0])
	require.Equal(z.t, "Completed", trail[len(trail)-1])
	d := z.drpc("app-1-drpc")
	require.Equal(z.t, drv1alpha1.ActionFailover, d.Spec.Action)
	require.Equal(z.t, to, d.Spec.FailoverCluster)
	require.Equal(z.t, drv1alpha1.DRStateFailedOver, d.Status.Phase)
	require.Equal(z.t, to, d.Status.PreferredDecision.ClusterName)
	require.Equal(z.t, to, z.quorumGroup("app-1").Spec.ActiveCluster)
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(z.t, z.Client(to).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: "app-1"}, g))
	require.Equal(z.t, srv1alpha1.StateRunning, g.Status.CurrentState, "the request completes when the application runs on %s", to)
}

// requireCleanedUp waits for the DRPC to finish the failover on the old
// primary: application stopped, VRG and VGR secondary.
func (z *offloadedZone) requireCleanedUp(old string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, "app-1 cleaned up on "+old, func() error {
		if p := z.drpc("app-1-drpc").Status.Progression; p != drv1alpha1.ProgressionCompleted {
			return fmt.Errorf("progression %s", p)
		}
		g := &srv1alpha1.ProtectionGroup{}
		if err := z.Client(old).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: "app-1"}, g); err != nil {
			return err
		}
		v := &drv1alpha1.VolumeReplicationGroup{}
		if err := z.Client(old).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: "app-1-drpc"}, v); err != nil {
			return err
		}
		if g.Status.CurrentState != srv1alpha1.StateStopped || v.Status.State != drv1alpha1.SecondaryState {
			return fmt.Errorf("group %s, VRG %s", g.Status.CurrentState, v.Status.State)
		}
		return nil
	})
	z.requireVGR(old, replicationv1alpha1.Secondary)
}

// requireVGR waits for the global VGR on a cluster to be asked for a state and
// to report it.
func (z *offloadedZone) requireVGR(cluster string, want replicationv1alpha1.ReplicationState) {
	z.t.Helper()
	env.Eventually(z.t, timeout, fmt.Sprintf("global VGR %s on %s", want, cluster), func() error {
		v := &replicationv1alpha1.VolumeGroupReplication{}
		key := client.ObjectKey{Namespace: vrg.DefaultOperatorNamespace, Name: drv1alpha1.GlobalVGRName(offloadedGroupID)}
		if err := z.Client(cluster).Get(z.ctx, key, v); err != nil {
			return err
		}
		if v.Spec.ReplicationState != want || v.Status.State != storagearray.StateFor(want) {
			return fmt.Errorf("spec %s, status %q", v.Spec.ReplicationState, v.Status.State)
		}
		return nil
	})
}

// requireRunsOn waits for the application to run on one cluster and be
// stopped on the other.
func (z *offloadedZone) requireRunsOn(group, on, off string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, group+" running on "+on, func() error {
		for c, want := range map[string]srv1alpha1.GroupState{on: srv1alpha1.StateRunning, off: srv1alpha1.StateStopped} {
			g := &srv1alpha1.ProtectionGroup{}
			if err := z.Client(c).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, g); err != nil {
				return err
			}
			if g.Status.CurrentState != want {
				return fmt.Errorf("on %s: %s", c, g.Status.CurrentState)
			}
		}
		return nil
	})
}
