package failover_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"github.com/stretchr/testify/require"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ramenv1alpha1 "github.com/siterecovery/siterecovery/apis/ramendr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/pkg/failover"
	"github.com/siterecovery/siterecovery/pkg/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

const offloadedPolicy = "offloaded-0m"

// TestOffloadedFailoverViaDRPC: on an Offloaded zone a planned FailoverRequest
// moves the group through its DRPlacementControl (Relocate to the target) and
// completes once the DRPC has relocated; a group without a DRPC fails at once.
func TestOffloadedFailoverViaDRPC(t *testing.T) {
	ctx := context.Background()
	e := env.New(t, env.Options{Backend: srv1alpha1.BackendOffloaded})
	q := e.Client(env.Quorum)
	create := func(cluster string, obj client.Object) {
		t.Helper()
		require.NoError(t, e.Client(cluster).Create(ctx, obj))
	}
	for i, c := range []string{env.Primary, env.DR} {
		e.StartWorkload(t, c, env.WorkloadOptions{})
		startFakeVRG(t, e, c)
		sid := fmt.Sprintf("sid-%d", i+1)
		create(c, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc-block",
			Labels: map[string]string{ramenv1alpha1.OffloadedLabel: "true", ramenv1alpha1.StorageIDLabel: sid}}, Provisioner: "array.csi"})
		create(c, &replicationv1alpha1.VolumeGroupReplicationClass{ObjectMeta: metav1.ObjectMeta{Name: "offloaded-vgrc",
			Labels: map[string]string{ramenv1alpha1.StorageIDLabel: sid, ramenv1alpha1.GroupReplicationIDLabel: "replication-group-01", ramenv1alpha1.GlobalLabel: "true"}},
			Spec: replicationv1alpha1.VolumeGroupReplicationClassSpec{Provisioner: "array.csi"}})
	}
	e.StartQuorum(t, setup.QuorumOptions{ProbeInterval: time.Second})
	create(env.Quorum, &ramenv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: offloadedPolicy},
		Spec: ramenv1alpha1.DRPolicySpec{DRClusters: []string{env.Primary, env.DR}, SchedulingInterval: "0m"}})

	addGroup := func(name string) {
		create(env.Primary, &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name + "-vm"},
			Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}})
		create(env.Quorum, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
			Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: env.AppNS, Name: name + "-vm"}},
				ActiveCluster: env.Primary, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}}})
	}
	getDRPC := func(name string) *ramenv1alpha1.DRPlacementControl {
		d := &ramenv1alpha1.DRPlacementControl{}
		require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, d))
		return d
	}
	request := func(name, pg string) {
		create(env.Quorum, &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
			Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: pg, Namespace: env.Namespace},
				TargetCluster: env.DR, FailoverType: srv1alpha1.FailoverPlanned, DrainTimeoutSeconds: 120, BatchBootTimeoutSeconds: 300}})
	}
	waitEnd := func(name string) *srv1alpha1.FailoverRequest {
		var fr *srv1alpha1.FailoverRequest
		env.Eventually(t, timeout, name+" finished", func() error {
			fr = &srv1alpha1.FailoverRequest{}
			if err := q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, fr); err != nil {
				return err
			}
			if fr.Status.Phase != srv1alpha1.FailoverCompleted && fr.Status.Phase != srv1alpha1.FailoverFailed {
				return fmt.Errorf("phase %s: %s", fr.Status.Phase, fr.Status.Message)
			}
			return nil
		})
		return fr
	}

	// A group with a DRPC deployed on the primary.
	addGroup("app-1")
	create(env.Quorum, &ramenv1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "app-1-drpc"},
		Spec: ramenv1alpha1.DRPlacementControlSpec{
			ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: "app-1"},
			DRPolicyRef:        srv1alpha1.LocalObjectReference{Name: offloadedPolicy},
			PVCSelector:        metav1.LabelSelector{MatchLabels: map[string]string{"app": "app-1"}},
			PreferredCluster:   env.Primary,
		}})
	env.Eventually(t, timeout, "app-1 deployed on the primary", func() error {
		d := getDRPC("app-1-drpc")
		if d.Status.Phase != ramenv1alpha1.DRStateDeployed || d.Status.Progression != ramenv1alpha1.ProgressionCompleted || d.Status.PreferredDecision.ClusterName != env.Primary {
			return fmt.Errorf("phase %s progression %s on %q", d.Status.Phase, d.Status.Progression, d.Status.PreferredDecision.ClusterName)
		}
		return nil
	})

	request("app-1-to-dr", "app-1")
	fr := waitEnd("app-1-to-dr")
	require.Equal(t, srv1alpha1.FailoverCompleted, fr.Status.Phase, fr.Status.Message)
	require.Equal(t, env.Primary, fr.Status.SourceCluster)
	d := getDRPC("app-1-drpc")
	require.Equal(t, ramenv1alpha1.ActionRelocate, d.Spec.Action)
	require.Equal(t, env.DR, d.Spec.PreferredCluster)
	require.Equal(t, ramenv1alpha1.DRStateRelocated, d.Status.Phase)
	require.Equal(t, env.DR, d.Status.PreferredDecision.ClusterName)
	require.True(t, meta.IsStatusConditionTrue(fr.Status.Conditions, srv1alpha1.ConditionReady))
	require.NotNil(t, meta.FindStatusCondition(fr.Status.Conditions, failover.ConditionDRPlacementControl))
	var trail []string
	for _, p := range fr.Status.PhaseHistory {
		trail = append(trail, p.Phase)
	}
	require.Equal(t, "Pending", trail[0])
	require.Equal(t, "StoppingOnSource", trail[1])
	require.Equal(t, "Completed", trail[len(trail)-1])
	t.Logf("audit trail: %v", trail)
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "app-1"}, pg))
	require.Equal(t, env.DR, pg.Spec.ActiveCluster)

	// A group without a DRPC.
	addGroup("app-2")
	request("app-2-to-dr", "app-2")
	fr = waitEnd("app-2-to-dr")
	require.Equal(t, srv1alpha1.FailoverFailed, fr.Status.Phase)
	require.Equal(t, failover.ReasonNoDRPlacementControl, meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady).Reason)
	require.Contains(t, fr.Status.Message, "create one")
	require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "app-2"}, pg))
	require.Equal(t, env.Primary, pg.Spec.ActiveCluster)
}

// fakeVRG plays the workload-side VRG controller and the storage array (a
// trimmed copy of the one in pkg/drpc's tests): it labels a primary VRG with
// global peer classes and reports the desired state as reached.
type fakeVRG struct{ c client.Client }

func startFakeVRG(t *testing.T, e *env.Env, cluster string) {
	mgr, err := ctrl.NewManager(e.Clusters[cluster].Config, ctrl.Options{Scheme: e.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	require.NoError(t, err)
	require.NoError(t, ctrl.NewControllerManagedBy(mgr).Named("fake-vrg").For(&ramenv1alpha1.VolumeReplicationGroup{}).Complete(&fakeVRG{c: mgr.GetClient()}))
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(c) }()
	t.Cleanup(func() { cancel(); <-done })
}

func (f *fakeVRG) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	v := &ramenv1alpha1.VolumeReplicationGroup{}
	if err := f.c.Get(ctx, req.NamespacedName, v); err != nil || !v.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if v.Spec.ReplicationState == ramenv1alpha1.Primary && v.Labels[ramenv1alpha1.GlobalVGRLabel] == "" && v.Spec.Async != nil {
		for _, pc := range v.Spec.Async.PeerClasses {
			if pc.Global {
				before := v.DeepCopy()
				if v.Labels == nil {
					v.Labels = map[string]string{}
				}
				v.Labels[ramenv1alpha1.GlobalVGRLabel] = ramenv1alpha1.GlobalVGRName(pc.GroupReplicationID)
				return ctrl.Result{}, f.c.Patch(ctx, v, client.MergeFrom(before))
			}
		}
	}
	want, reason := ramenv1alpha1.PrimaryState, ramenv1alpha1.ReasonReady
	if v.Spec.ReplicationState == ramenv1alpha1.Secondary {
		want, reason = ramenv1alpha1.SecondaryState, ramenv1alpha1.ReasonUnused
	}
	if v.Status.State == want && v.Status.ObservedGeneration == v.Generation {
		return ctrl.Result{}, nil
	}
	v.Status.State, v.Status.ObservedGeneration = want, v.Generation
	v.Status.ProtectedPVCs = []ramenv1alpha1.ProtectedPVC{}
	for _, t := range []string{ramenv1alpha1.ConditionDataReady, ramenv1alpha1.ConditionDataProtected} {
		meta.SetStatusCondition(&v.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason,
			Message: ramenv1alpha1.MessagePVCReady, ObservedGeneration: v.Generation})
	}
	return ctrl.Result{}, f.c.Status().Update(ctx, v)
}
