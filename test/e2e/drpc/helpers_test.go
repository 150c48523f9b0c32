package drpc_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/drpc"
	"github.com/siterecovery/siterecovery/internal/workload/vrg"
	"github.com/siterecovery/siterecovery/test/env"
)

const (
	policyName = "offloaded-0m"
	grID       = "replication-group-01"
	timeout    = 120 * time.Second
)

var ctx = context.Background()

// zone is an Offloaded zone: the workload tier with the real VRG controller and
// a storage array simulator on each workload cluster, one global replication
// group's storage on both, quorum-manager, and a DRPolicy with a global peer
// class.
type zone struct {
	*env.Env
	t      testing.TB
	safety *env.Safety
	quorum *env.Process
	// procs are the zone's controllers, which a test kills and restarts.
	procs *env.Processes
}

const (
	storageClass = "sc-block"
	// arrayDelay is the simulated array's time to change a volume group's role.
	arrayDelay = 100 * time.Millisecond
)

func newZone(t testing.TB) *zone {
	return newZoneWith(t, env.OffloadedZone{Policy: policyName})
}

// newZoneWith is newZone with o's policy, interval and array sync.
func newZoneWith(t testing.TB, o env.OffloadedZone) *zone { return newZoneOn(t, env.Options{}, o) }

// newZoneOn is newZoneWith on a zone built with e, on the Offloaded backend.
func newZoneOn(t testing.TB, e env.Options, o env.OffloadedZone) *zone {
	e.Backend = srv1alpha1.BackendOffloaded
	z := &zone{Env: env.New(t, e), t: t}
	if o.ArrayDelay == 0 {
		o.ArrayDelay = arrayDelay
	}
	if o.Processes == nil {
		o.Processes = z.NewProcesses()
	}
	z.procs = o.Processes
	o.StorageClass, o.ReplicationClass, o.GroupReplicationID = storageClass, "offloaded-vgrc", grID
	z.safety, z.quorum = z.StartOffloaded(t, o)
	env.Eventually(t, timeout, "global peer class", func() error {
		p := &drv1alpha1.DRPolicy{}
		if err := z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: o.Policy}, p); err != nil {
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

// addApp creates an application active on cluster: its PVC on both clusters
// (the array's replica on the other one), its VM running on cluster with the
// PVC as disk and halted on the other, its group and the DRPC.
func (z *zone) addApp(name, cluster string) {
	z.addAppWith(name, cluster, policyName, srv1alpha1.ReplicationSettings{})
}

// addAppWith is addApp under policy, with the group's replication settings.
func (z *zone) addAppWith(name, cluster, policy string, replication srv1alpha1.ReplicationSettings) {
	for _, c := range []string{env.Primary, env.DR} {
		z.CreateAppPVC(z.t, c, name, storageClass)
	}
	z.create(cluster, env.AppVM(name, kubevirtv1.RunStrategyAlways))
	// The application runs before it is protected, as a user's VM does: the
	// DRPC then creates its VGR around a running VM. Had the VM not started
	// yet (a KubeVirt start delay), its VMI would appear after the VGR, with
	// the VGR not yet Primary, and the safety recorder would flag a start the
	// DRPC never asked for.
	env.Eventually(z.t, timeout, name+" running on "+cluster+" before it is protected", func() error {
		vmi := &kubevirtv1.VirtualMachineInstance{}
		if err := z.Client(cluster).Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: env.AppVMName(name)}, vmi); err != nil {
			return err
		}
		if vmi.Status.Phase != kubevirtv1.Running {
			return fmt.Errorf("VMI phase %q", vmi.Status.Phase)
		}
		return nil
	})
	// The standby VM exists before its group copy, as after protection: a copy
	// whose VM appears just after it was reconciled can keep a stale
	// currentState (internal/workload/protectiongroup patchStatus merges against the cache).
	z.create(z.other(cluster), env.AppVM(name, kubevirtv1.RunStrategyHalted))
	refs := []srv1alpha1.VirtualMachineReference{{Namespace: env.AppNS, Name: env.AppVMName(name)}}
	z.create(env.Quorum, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, ActiveCluster: cluster, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName},
			Replication: replication}})
	z.create(env.Quorum, &drv1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: drv1alpha1.DRPlacementControlSpec{
			ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: name},
			DRPolicyRef:        srv1alpha1.LocalObjectReference{Name: policy},
			PVCSelector:        metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			PreferredCluster:   cluster,
		}})
}

func (z *zone) other(cluster string) string {
	if cluster == env.Primary {
		return env.DR
	}
	return env.Primary
}

func (z *zone) drpc(name string) *drv1alpha1.DRPlacementControl {
	d := &drv1alpha1.DRPlacementControl{}
	require.NoError(z.t, z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, d))
	return d
}

func (z *zone) updateDRPC(name string, mutate func(*drv1alpha1.DRPlacementControl)) {
	z.t.Helper()
	d := z.drpc(name)
	before := d.DeepCopy()
	mutate(d)
	require.NoError(z.t, z.Client(env.Quorum).Patch(ctx, d, client.MergeFrom(before)))
}

// waitDRPC waits for a DRPC to reach a phase on a cluster, its progression Completed.
func (z *zone) waitDRPC(name string, phase drv1alpha1.DRState, cluster string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, name+" "+string(phase)+"/"+string(drv1alpha1.ProgressionCompleted), func() error {
		return z.drpcAt(name, phase, drv1alpha1.ProgressionCompleted, cluster)
	})
}

// waitRelocated waits for a Relocate to complete.
func (z *zone) waitRelocated(name, from, to string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, name+" relocated from "+from+" to "+to, func() error {
		return z.drpcAt(name, drv1alpha1.DRStateRelocated, drv1alpha1.ProgressionCompleted, to)
	})
}

func (z *zone) drpcAt(name string, phase drv1alpha1.DRState, progression drv1alpha1.ProgressionStatus, cluster string) error {
	d := z.drpc(name)
	st := d.Status
	if st.Phase == phase && st.Progression == progression && st.PreferredDecision.ClusterName == cluster && st.ObservedGeneration == d.Generation {
		return nil
	}
	var groups []string
	for _, c := range []string{env.Primary, env.DR} {
		g := &srv1alpha1.ProtectionGroup{}
		err := z.Client(c).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: d.Spec.ProtectionGroupRef.Name}, g)
		groups = append(groups, fmt.Sprintf("%s: %v desired %s current %s gen %d/%d", c, err, g.Spec.DesiredState, g.Status.CurrentState, g.Status.ObservedGeneration, g.Generation))
	}
	return fmt.Errorf("phase %s progression %s on %q, conditions %+v, groups %v", st.Phase, st.Progression, st.PreferredDecision.ClusterName, st.Conditions, groups)
}

func (z *zone) vrg(cluster, name string) (*drv1alpha1.VolumeReplicationGroup, error) {
	v := &drv1alpha1.VolumeReplicationGroup{}
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

func (z *zone) vgr(cluster string) (*replicationv1alpha1.VolumeGroupReplication, error) {
	v := &replicationv1alpha1.VolumeGroupReplication{}
	return v, z.Client(cluster).Get(ctx, client.ObjectKey{Namespace: vrg.DefaultOperatorNamespace, Name: drv1alpha1.GlobalVGRName(grID)}, v)
}

// consistently fails the test if cond fails at any poll during d.
func consistently(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		require.NoError(t, cond(), what)
	}
}

func condition(d *drv1alpha1.DRPlacementControl, t string) metav1.Condition {
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

func keyOf(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: env.Namespace, Name: name}
}
