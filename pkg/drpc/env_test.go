package drpc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ramenv1alpha1 "github.com/siterecovery/siterecovery/apis/ramendr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/pkg/drpc"
	"github.com/siterecovery/siterecovery/pkg/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

const (
	policyName = "offloaded-0m"
	grID       = "replication-group-01"
	timeout    = 120 * time.Second
)

var ctx = context.Background()

// zone is an Offloaded zone with the workload tier, quorum-manager and, on each
// workload cluster, a stand-in for the workload-side VRG controller and the
// storage array behind it (pkg/vrg is being written in parallel).
type zone struct {
	*env.Env
	t    testing.TB
	vrgs map[string]*fakeVRG
}

func newZone(t testing.TB, withWorkload bool) *zone {
	z := &zone{Env: env.New(t, env.Options{Backend: srv1alpha1.BackendOffloaded}), t: t, vrgs: map[string]*fakeVRG{}}
	for i, c := range []string{env.Primary, env.DR} {
		if withWorkload {
			z.StartWorkload(t, c, env.WorkloadOptions{})
		}
		z.vrgs[c] = z.startFakeVRG(c)
		sid := fmt.Sprintf("sid-%d", i+1)
		z.create(c, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc-block",
			Labels: map[string]string{ramenv1alpha1.OffloadedLabel: "true", ramenv1alpha1.StorageIDLabel: sid}}, Provisioner: "array.csi"})
		z.create(c, &replicationv1alpha1.VolumeGroupReplicationClass{ObjectMeta: metav1.ObjectMeta{Name: "offloaded-vgrc",
			Labels: map[string]string{ramenv1alpha1.StorageIDLabel: sid, ramenv1alpha1.GroupReplicationIDLabel: grID, ramenv1alpha1.GlobalLabel: "true"}},
			Spec: replicationv1alpha1.VolumeGroupReplicationClassSpec{Provisioner: "array.csi"}})
	}
	z.StartQuorum(t, setup.QuorumOptions{ProbeInterval: time.Second})
	z.create(env.Quorum, &ramenv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: policyName},
		Spec: ramenv1alpha1.DRPolicySpec{DRClusters: []string{env.Primary, env.DR}, SchedulingInterval: "0m"}})
	env.Eventually(t, timeout, "global peer class", func() error {
		p := &ramenv1alpha1.DRPolicy{}
		if err := z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: policyName}, p); err != nil {
			return err
		}
		if len(p.Status.PeerClasses) != 1 || !p.Status.PeerClasses[0].Global {
			return fmt.Errorf("peerClasses %+v", p.Status.PeerClasses)
		}
		return nil
	})
	return z
}

func (z *zone) create(cluster string, obj client.Object) {
	z.t.Helper()
	require.NoError(z.t, z.Client(cluster).Create(ctx, obj))
}

// addApp creates a running VM on cluster, its group (active there) and the DRPC.
func (z *zone) addApp(name, cluster string, withVM bool) {
	var refs []srv1alpha1.VirtualMachineReference
	if withVM {
		z.create(cluster, &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name + "-vm"},
			Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}})
	}
	refs = append(refs, srv1alpha1.VirtualMachineReference{Namespace: env.AppNS, Name: name + "-vm"})
	z.create(env.Quorum, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, ActiveCluster: cluster, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}}})
	z.create(env.Quorum, &ramenv1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: ramenv1alpha1.DRPlacementControlSpec{
			ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: name},
			DRPolicyRef:        srv1alpha1.LocalObjectReference{Name: policyName},
			PVCSelector:        metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			PreferredCluster:   cluster,
		}})
}

func (z *zone) drpc(name string) *ramenv1alpha1.DRPlacementControl {
	d := &ramenv1alpha1.DRPlacementControl{}
	require.NoError(z.t, z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, d))
	return d
}

func (z *zone) updateDRPC(name string, mutate func(*ramenv1alpha1.DRPlacementControl)) {
	z.t.Helper()
	d := z.drpc(name)
	before := d.DeepCopy()
	mutate(d)
	require.NoError(z.t, z.Client(env.Quorum).Patch(ctx, d, client.MergeFrom(before)))
}

// waitDRPC waits for a DRPC to reach a phase and progression on a cluster.
func (z *zone) waitDRPC(name string, phase ramenv1alpha1.DRState, progression ramenv1alpha1.ProgressionStatus, cluster string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, name+" "+string(phase)+"/"+string(progression), func() error {
		d := z.drpc(name)
		st := d.Status
		if st.Phase != phase || st.Progression != progression || st.PreferredDecision.ClusterName != cluster || st.ObservedGeneration != d.Generation {
			var groups []string
			for _, c := range []string{env.Primary, env.DR} {
				g := &srv1alpha1.ProtectionGroup{}
				err := z.Client(c).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: d.Spec.ProtectionGroupRef.Name}, g)
				groups = append(groups, fmt.Sprintf("%s: %v desired %s current %s gen %d/%d", c, err, g.Spec.DesiredState, g.Status.CurrentState, g.Status.ObservedGeneration, g.Generation))
			}
			return fmt.Errorf("phase %s progression %s on %q, conditions %+v, groups %v", st.Phase, st.Progression, st.PreferredDecision.ClusterName, st.Conditions, groups)
		}
		return nil
	})
}

func (z *zone) vrg(cluster, name string) (*ramenv1alpha1.VolumeReplicationGroup, error) {
	v := &ramenv1alpha1.VolumeReplicationGroup{}
	return v, z.Client(cluster).Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: name}, v)
}

func (z *zone) group(cluster, name string) *srv1alpha1.ProtectionGroup {
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(z.t, z.Client(cluster).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, g))
	return g
}

// requireRunsOn checks the application runs on one cluster and is stopped on the other.
func (z *zone) requireRunsOn(name, on, off string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, name+" running on "+on, func() error {
		if g := z.group(on, name); g.Spec.DesiredState != srv1alpha1.StateRunning || g.Status.CurrentState != srv1alpha1.StateRunning {
			return fmt.Errorf("on %s: desired %s current %s", on, g.Spec.DesiredState, g.Status.CurrentState)
		}
		if g := z.group(off, name); g.Spec.DesiredState != srv1alpha1.StateStopped {
			return fmt.Errorf("on %s: desired %s", off, g.Spec.DesiredState)
		}
		return nil
	})
}

func condition(d *ramenv1alpha1.DRPlacementControl, t string) metav1.Condition {
	if c := meta.FindStatusCondition(d.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// consensusMetric reads ramen_global_action_consensus_status of a DRPC from
// the controller-runtime registry quorum-manager registers on in-process.
func consensusMetric(t testing.TB, name string) (float64, bool) {
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != drpc.MetricConsensusStatus {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "obj_name") == name && label(m, "obj_namespace") == env.Namespace {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// fakeVRG plays the workload-side VRG controller and the storage array: it
// labels a primary VRG whose peer classes hold a global class with global-vgr
// (§3.1), reports the desired state as reached with DataReady/DataProtected,
// never reports a lastGroupSyncTime (schedulingInterval 0m), and records a
// violation when a VRG is asked to be secondary while its application has not
// stopped on that cluster.
type fakeVRG struct {
	c      client.Client
	reader client.Reader

	mu         sync.Mutex
	violations []string
}

func (z *zone) startFakeVRG(cluster string) *fakeVRG {
	mgr, err := ctrl.NewManager(z.Clusters[cluster].Config, ctrl.Options{Scheme: z.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	require.NoError(z.t, err)
	f := &fakeVRG{c: mgr.GetClient(), reader: mgr.GetAPIReader()}
	require.NoError(z.t, ctrl.NewControllerManagedBy(mgr).Named("fake-vrg").For(&ramenv1alpha1.VolumeReplicationGroup{}).Complete(f))
	c, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(c) }()
	z.t.Cleanup(func() { cancel(); <-done })
	return f
}

func (f *fakeVRG) Violations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
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
				v.Labels[ramenv1alpha1.GlobalVGRLabel] = ramenv1alpha1.GlobalVGRName(pc.GroupReplicationID)
				return ctrl.Result{}, f.c.Patch(ctx, v, client.MergeFrom(before))
			}
		}
	}
	want, reason := ramenv1alpha1.PrimaryState, ramenv1alpha1.ReasonReady
	if v.Spec.ReplicationState == ramenv1alpha1.Secondary {
		want, reason = ramenv1alpha1.SecondaryState, ramenv1alpha1.ReasonUnused
		g := &srv1alpha1.ProtectionGroup{}
		err := f.reader.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: v.Spec.ProtectionGroupRef}, g)
		if err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		if err == nil && g.Status.CurrentState != srv1alpha1.StateStopped && v.Status.State != ramenv1alpha1.SecondaryState {
			f.mu.Lock()
			f.violations = append(f.violations, fmt.Sprintf("VRG %s asked to be secondary while its group is %q", v.Name, g.Status.CurrentState))
			f.mu.Unlock()
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
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

func keyOf(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: env.Namespace, Name: name}
}
