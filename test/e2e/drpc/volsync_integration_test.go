package drpc_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/sim/mover"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

const (
	vsPolicy    = "volsync-1m"
	vsClass     = "cephfs"
	vsBlockSize = 4096
	vsBlocks    = 1000
	vsApp       = "vs-app"
	// The snapshot-controller takes group snapshots only of volumes of the
	// class's driver: the storage simulator's.
	vsProvisioner = storagesim.Driver
	rpoObjective  = 2
)

// vsZone is a VolSync zone: the workload tier with the VolSync path and its
// simulators on both clusters, sharing one block store, and quorum-manager.
type vsZone struct {
	*env.Env
	t *testing.T
	f *env.VolSyncFixture
}

// TestVolSyncFlows runs the DRPC flows of a VolSync group (diff mode) on
// three real API servers, with the data checked by checksums: enable (one
// pre-shared key on both sides, the secondary's rdSpecs from the primary's
// protected PVCs, images equal to the primary), failover (the new primary
// holds the last complete image and not the writes after it), the first sync
// after it (full), relocate (final sync, incremental, nothing lost) and
// disable (VRGs and keys gone). The key was minted before the group label
// existed; quorum-manager labels its copies, without re-minting it.
func TestVolSyncFlows(t *testing.T) {
	z := &vsZone{Env: env.New(t, env.Options{Backend: srv1alpha1.BackendVolSync}), t: t}
	z.f = z.StartVolSync(t, env.VolSyncZone{StorageClass: vsClass, Provisioner: vsProvisioner, GroupSnapshotClass: "cephfs-vgsc",
		Policy: vsPolicy, SchedulingInterval: "1m", BlockSize: vsBlockSize, Blocks: vsBlocks})
	P, D := env.Primary, env.DR
	pvc := env.AppPVCName(vsApp)

	// Enable.
	z.CreateAppPVC(t, P, vsApp, vsClass)
	z.f.Data.Fill(z.volume(P), 11)
	require.NoError(t, z.Client(P).Create(ctx, env.AppVM(vsApp, kubevirtv1.RunStrategyAlways)))
	require.NoError(t, z.Client(D).Create(ctx, env.AppVM(vsApp, kubevirtv1.RunStrategyHalted)))
	refs := []srv1alpha1.VirtualMachineReference{{Namespace: env.AppNS, Name: env.AppVMName(vsApp)}}
	require.NoError(t, z.Client(env.Quorum).Create(ctx, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: vsApp},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, ActiveCluster: P, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName},
			Replication: srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: rpoObjective}}}))
	// The key was minted by a release before the group label: both
	// workload clusters' copies lack it, and the minting side adds it.
	oldKey := func() *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: drv1alpha1.VolSyncPSKSecretName(vsApp),
			Labels: map[string]string{srv1alpha1.ManagedByLabel: srv1alpha1.ManagedByValue, srv1alpha1.ZoneLabel: env.ZoneName}},
			Data: map[string][]byte{drv1alpha1.VolSyncPSKKey: []byte("volsync:0123456789abcdef0123456789abcdef")}}
	}
	for _, c := range []string{env.Quorum, P, D} {
		require.NoError(t, z.Client(c).Create(ctx, oldKey()))
	}
	require.NoError(t, z.Client(env.Quorum).Create(ctx, &drv1alpha1.DRPlacementControl{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: vsApp, Annotations: map[string]string{drv1alpha1.EnableDiffAnnotation: "true"}},
		Spec: drv1alpha1.DRPlacementControlSpec{
			ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: vsApp},
			DRPolicyRef:        srv1alpha1.LocalObjectReference{Name: vsPolicy},
			PVCSelector:        metav1.LabelSelector{MatchLabels: map[string]string{"app": vsApp}},
			PreferredCluster:   P,
		}}))
	z.waitProtected(P, nil)
	v := z.vrgOn(D)
	require.Equal(t, drv1alpha1.Secondary, v.Spec.ReplicationState)
	require.NotNil(t, v.Spec.VolSync, "the secondary receives the primary's protected PVCs")
	require.Len(t, v.Spec.VolSync.RDSpecs, 1)
	spec := v.Spec.VolSync.RDSpecs[0].ProtectedPVC
	require.Equal(t, pvc, spec.Name)
	require.Equal(t, vsApp, spec.Labels["app"])
	size := spec.Resources.Requests[corev1.ResourceStorage]
	require.Equal(t, "1Gi", size.String())
	for _, c := range []string{P, D} {
		require.Equal(t, "true", z.vrgOn(c).Annotations[drv1alpha1.EnableDiffAnnotation], "the diff switch reaches the VRG on %s", c)
	}
	key := z.key(env.Quorum, env.Namespace)
	require.NotEmpty(t, key)
	require.Equal(t, key, z.key(P, env.AppNS), "one key, minted once, on both clusters")
	require.Equal(t, key, z.key(D, env.AppNS))
	require.Equal(t, "volsync:0123456789abcdef0123456789abcdef", key, "the old key is kept, not re-minted")
	for _, c := range []string{P, D} {
		old := &corev1.Secret{}
		require.NoError(t, z.Client(c).Get(ctx, client.ObjectKeyFromObject(oldKey()), old))
		require.Equal(t, vsApp, old.Labels[srv1alpha1.ProtectionGroupLabel], "the old key's copy on %s got its group label", c)
	}
	z.waitEqual(P, D, "the first cycle's image")
	require.True(t, z.transfers(P)[0].Full, "the first cycle has no base")

	// Monitoring: the group's ReplicationGroupStatus follows the last
	// complete sync; a lag past the objective (2 s against a 1m schedule)
	// opens an RPOEvent.
	env.Eventually(t, timeout, "ReplicationGroupStatus and RPOEvent of the VolSync group", func() error {
		st := &srv1alpha1.ReplicationGroupStatus{}
		if err := z.Client(env.Quorum).Get(ctx, keyOf(vsApp), st); err != nil {
			return err
		}
		if !st.Status.FailoverReady || len(st.Status.VirtualMachines) != 1 || st.Status.ActiveRPOEvent == "" {
			return fmt.Errorf("status %+v", st.Status)
		}
		ev := &srv1alpha1.RPOEvent{}
		if err := z.Client(env.Quorum).Get(ctx, keyOf(st.Status.ActiveRPOEvent), ev); err != nil {
			return err
		}
		if want := fmt.Sprintf("exceeds the objective of %ds", rpoObjective); !strings.Contains(ev.Status.Message, want) {
			return fmt.Errorf("RPOEvent message %q lacks %q", ev.Status.Message, want)
		}
		return nil
	})
	// The lag alerts compare the group's lag with its scheduling interval,
	// which the monitor exports with the last complete sync.
	env.Eventually(t, timeout, "sync metrics of the VolSync group", func() error {
		got := gauges(t, vsApp)
		if got["siterecovery_replication_sync_interval_seconds"] != 60 || got["siterecovery_replication_last_sync_timestamp_seconds"] == 0 {
			return fmt.Errorf("metrics %v", got)
		}
		return nil
	})

	// Failover: the link fails, the application writes on, the primary is
	// lost; the target holds the last complete image, not the later writes.
	z.f.Mover.SetFault(env.AppNS, pvc, &mover.Fault{Fail: "link down"})
	z.waitNoCycle(P)
	lastImage := z.f.Data.Checksum(z.volume(D))
	z.f.Data.Change(z.volume(P), 0.05, 12)
	lost := z.f.Data.Checksum(z.volume(P))
	require.NotEqual(t, lastImage, lost)
	image := z.lastCycle(P)
	fr := z.failover("vs-unplanned", D)
	z.waitPhase(drv1alpha1.DRStateFailedOver, D)
	// The request names the time of the image the target restored: the
	// data-loss window the user has to reconcile.
	risk := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionDataLossRisk)
	require.NotNil(t, risk, "an unplanned failover records what may be lost")
	require.Equal(t, "RestoredFromImage", risk.Reason, risk.Message)
	require.Contains(t, risk.Message, "restored from its last complete sync at "+image.UTC().Format(time.RFC3339))
	require.Equal(t, lastImage, z.f.Data.Checksum(z.volume(D)), "the new primary holds the last complete image")
	rb := z.f.Mover.Transfers(env.AppNS, "rb-"+pvc)
	require.Len(t, rb, 1, "the new primary rolled its PVC back to the image once")
	require.False(t, rb[0].Full, "diff mode compares the PVC with the image")
	require.Zero(t, rb[0].Bytes, "no sync was interrupted: nothing differs, nothing moves")
	z.waitEvent(string(drv1alpha1.DRStateFailedOver), "restored from the last complete sync at")
	// With the link still down the new primary's cycles fail: its PVCs stay
	// ready, and DataProtected names the failure (the failover above did not
	// wait for a cycle that cannot reach the lost site).
	env.Eventually(t, timeout, "the new primary reports the failing sync", func() error {
		v := z.vrgOn(D)
		ready := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionDataReady)
		protected := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionDataProtected)
		if ready == nil || ready.Status != metav1.ConditionTrue || protected == nil || protected.Status != metav1.ConditionFalse ||
			!strings.Contains(protected.Message, "link down") {
			return fmt.Errorf("DataReady %+v, DataProtected %+v", ready, protected)
		}
		return nil
	})
	z.waitPhase(drv1alpha1.DRStateFailedOver, D)
	// Once the link is back, the mover's retry makes the next cycle succeed.
	z.f.Mover.SetFault(env.AppNS, pvc, nil)

	// The old primary turns secondary and the first sync from the new
	// primary is a full one; its image replaces the lost writes.
	failedOver := z.drpcNow().Status.LastGroupSyncTime
	z.waitProtected(D, failedOver)
	z.waitEqual(D, P, "the first image after the failover")
	after := z.transfers(D)[0]
	require.True(t, after.Full, "after a failover the first sync is a full sync")
	require.Equal(t, z.f.Data.Size(), after.Bytes)

	// Relocate: the application writes on the new primary, then moves back;
	// the final sync sends only the changed blocks and nothing is lost.
	before := len(z.transfers(D))
	changed := z.f.Data.Change(z.volume(D), 0.01, 13)
	seen := z.recordProgressions()
	z.patchDRPC(func(d *drv1alpha1.DRPlacementControl) {
		d.Spec.Action, d.Spec.PreferredCluster = drv1alpha1.ActionRelocate, P
	})
	z.waitPhase(drv1alpha1.DRStateRelocated, P)
	require.Contains(t, seen(), drv1alpha1.ProgressionRunningFinalSync)
	require.Equal(t, z.f.Data.Checksum(z.volume(D)), z.f.Data.Checksum(z.volume(P)), "no data lost")
	// The final sync, and any scheduled cycle before it, sent only the
	// changed blocks.
	var moved int64
	for _, tr := range z.transfers(D)[before:] {
		require.False(t, tr.Full, "a later cycle is incremental")
		moved += tr.Bytes
	}
	require.Equal(t, int64(changed)*vsBlockSize, moved)

	// Disable: the VRGs go on both clusters, and every copy of the key.
	require.NoError(t, z.Client(env.Quorum).Delete(ctx, z.drpcNow()))
	env.Eventually(t, timeout, "VolSync DRPC finalized", func() error {
		for _, c := range []string{P, D} {
			if _, err := z.vrg(c, vsApp); !apierrors.IsNotFound(err) {
				return fmt.Errorf("VRG on %s: %w", c, err)
			}
		}
		for c, ns := range map[string]string{env.Quorum: env.Namespace, P: env.AppNS, D: env.AppNS} {
			err := z.Client(c).Get(ctx, client.ObjectKey{Namespace: ns, Name: drv1alpha1.VolSyncPSKSecretName(vsApp)}, &corev1.Secret{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("key Secret on %s: %w", c, err)
			}
		}
		// No snapshot of the group stays: neither the primary's group
		// snapshots nor the secondary's images.
		for _, c := range []string{P, D} {
			vs := &snapshotv1.VolumeSnapshotList{}
			vgs := &groupsnapshotv1.VolumeGroupSnapshotList{}
			for _, l := range []client.ObjectList{vs, vgs} {
				if err := z.Client(c).List(ctx, l, client.InNamespace(env.AppNS)); err != nil {
					return err
				}
			}
			if len(vs.Items)+len(vgs.Items) > 0 {
				var left []string
				for _, o := range vs.Items {
					left = append(left, fmt.Sprintf("VolumeSnapshot %s (labels %v, owners %v)", o.Name, o.Labels, o.OwnerReferences))
				}
				for _, o := range vgs.Items {
					left = append(left, fmt.Sprintf("VolumeGroupSnapshot %s (labels %v)", o.Name, o.Labels))
				}
				return fmt.Errorf("on %s, left: %s", c, strings.Join(left, "; "))
			}
		}
		return nil
	})
}

// lastCycle is the time of the last complete cycle of the group's source on
// cluster.
func (z *vsZone) lastCycle(cluster string) time.Time {
	z.t.Helper()
	list := &drv1alpha1.ReplicationGroupSourceList{}
	require.NoError(z.t, z.Client(cluster).List(ctx, list, client.InNamespace(env.AppNS)))
	require.Len(z.t, list.Items, 1)
	last := list.Items[0].Status.LastSyncTime
	require.NotNil(z.t, last, "a cycle completed")
	return last.Time
}

// failover asks for an unplanned failover of the group to target with a
// FailoverRequest, confirmed, and returns it once completed.
func (z *vsZone) failover(name, target string) *srv1alpha1.FailoverRequest {
	z.t.Helper()
	fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name,
		Annotations: map[string]string{srv1alpha1.ConfirmAnnotation: vsApp}},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: vsApp, Namespace: env.Namespace},
			TargetCluster: target, FailoverType: srv1alpha1.FailoverUnplanned, DrainTimeoutSeconds: 120, BatchBootTimeoutSeconds: 300}}
	require.NoError(z.t, z.Client(env.Quorum).Create(ctx, fr))
	env.Eventually(z.t, timeout, name+" completed", func() error {
		if err := z.Client(env.Quorum).Get(ctx, client.ObjectKeyFromObject(fr), fr); err != nil {
			return err
		}
		if fr.Status.Phase != srv1alpha1.FailoverCompleted {
			return fmt.Errorf("phase %s: %s", fr.Status.Phase, fr.Status.Message)
		}
		return nil
	})
	return fr
}

func (z *vsZone) vrg(cluster, name string) (*drv1alpha1.VolumeReplicationGroup, error) {
	v := &drv1alpha1.VolumeReplicationGroup{}
	return v, z.Client(cluster).Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: name}, v)
}

func (z *vsZone) vrgOn(cluster string) *drv1alpha1.VolumeReplicationGroup {
	z.t.Helper()
	v, err := z.vrg(cluster, vsApp)
	require.NoError(z.t, err)
	return v
}

// volume is the data handle of the application's PVC on a cluster, once bound.
func (z *vsZone) volume(cluster string) string {
	z.t.Helper()
	var name string
	env.Eventually(z.t, timeout, "PVC bound on "+cluster, func() error {
		if name = z.Volume(z.t, cluster, env.AppNS, env.AppPVCName(vsApp)); name == "" {
			return fmt.Errorf("not bound")
		}
		return nil
	})
	return name
}

func (z *vsZone) key(cluster, ns string) string {
	z.t.Helper()
	s := &corev1.Secret{}
	require.NoError(z.t, z.Client(cluster).Get(ctx, client.ObjectKey{Namespace: ns, Name: drv1alpha1.VolSyncPSKSecretName(vsApp)}, s))
	return string(s.Data[drv1alpha1.VolSyncPSKKey])
}

func (z *vsZone) drpcNow() *drv1alpha1.DRPlacementControl {
	z.t.Helper()
	d := &drv1alpha1.DRPlacementControl{}
	require.NoError(z.t, z.Client(env.Quorum).Get(ctx, keyOf(vsApp), d))
	return d
}

func (z *vsZone) patchDRPC(mutate func(*drv1alpha1.DRPlacementControl)) {
	z.t.Helper()
	d := z.drpcNow()
	before := d.DeepCopy()
	mutate(d)
	require.NoError(z.t, z.Client(env.Quorum).Patch(ctx, d, client.MergeFrom(before)))
}

func (z *vsZone) waitPhase(phase drv1alpha1.DRState, cluster string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, string(phase)+" on "+cluster, func() error {
		d := z.drpcNow()
		st := d.Status
		if st.Phase == phase && st.PreferredDecision.ClusterName == cluster && st.ObservedGeneration == d.Generation &&
			(st.Progression == drv1alpha1.ProgressionCompleted || st.Progression == drv1alpha1.ProgressionCleaningUp) {
			return nil
		}
		return fmt.Errorf("phase %s progression %s on %q, conditions %+v", st.Phase, st.Progression, st.PreferredDecision.ClusterName, st.Conditions)
	})
}

// waitProtected waits until the DRPC, placed on cluster, is Protected with a
// lastGroupSyncTime after since.
func (z *vsZone) waitProtected(cluster string, since *metav1.Time) {
	z.t.Helper()
	env.Eventually(z.t, timeout, "protected on "+cluster, func() error {
		d := z.drpcNow()
		c := meta.FindStatusCondition(d.Status.Conditions, drv1alpha1.ConditionProtected)
		last := d.Status.LastGroupSyncTime
		switch {
		case d.Status.PreferredDecision.ClusterName != cluster:
			return fmt.Errorf("placed on %q", d.Status.PreferredDecision.ClusterName)
		case c == nil || c.Status != metav1.ConditionTrue:
			return fmt.Errorf("protected %+v", c)
		case last == nil || (since != nil && !last.After(since.Time)):
			return fmt.Errorf("lastGroupSyncTime %v, want after %v", last, since)
		case !meta.IsStatusConditionTrue(d.Status.Conditions, drv1alpha1.ConditionPeerReady):
			return fmt.Errorf("peer not ready: %+v", d.Status.Conditions)
		}
		return nil
	})
}

// waitEqual waits until the PVC on to holds what the PVC on from holds.
func (z *vsZone) waitEqual(from, to, what string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, what, func() error {
		want, got := z.f.Data.Checksum(z.volume(from)), z.f.Data.Checksum(z.volume(to))
		if want != got {
			return fmt.Errorf("%s holds %s, %s holds %s", from, want, to, got)
		}
		return nil
	})
}

// waitNoCycle waits until the group's source on cluster moves no data: idle
// or failing.
func (z *vsZone) waitNoCycle(cluster string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, "no cycle moving data on "+cluster, func() error {
		list := &drv1alpha1.ReplicationGroupSourceList{}
		if err := z.Client(cluster).List(ctx, list, client.InNamespace(env.AppNS)); err != nil {
			return err
		}
		for _, g := range list.Items {
			c := meta.FindStatusCondition(g.Status.Conditions, "Ready")
			if g.Status.CurrentVolumeGroupSnapshot != "" && (c == nil || c.Reason != "SourceFailing") {
				return fmt.Errorf("cycle %s running: %+v", g.Status.CurrentVolumeGroupSnapshot, c)
			}
		}
		return nil
	})
}

// transfers are the completed syncs of the application's PVC from cluster,
// oldest first; at least one.
func (z *vsZone) transfers(cluster string) []mover.Transfer {
	z.t.Helper()
	var out []mover.Transfer
	env.Eventually(z.t, timeout, "a transfer from "+cluster, func() error {
		out = nil
		for _, tr := range z.f.Mover.Transfers(env.AppNS, env.AppPVCName(vsApp)) {
			if tr.Cluster == cluster {
				out = append(out, tr)
			}
		}
		if len(out) == 0 {
			return fmt.Errorf("none")
		}
		return nil
	})
	return out
}

// recordProgressions polls the DRPC's progression until the test ends and
// returns what it saw so far.
func (z *vsZone) recordProgressions() func() []drv1alpha1.ProgressionStatus {
	done := make(chan struct{})
	seen := make(chan []drv1alpha1.ProgressionStatus, 1)
	seen <- nil
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			d := &drv1alpha1.DRPlacementControl{}
			if err := z.Client(env.Quorum).Get(ctx, keyOf(vsApp), d); err == nil {
				s := <-seen
				if !slices.Contains(s, d.Status.Progression) {
					s = append(s, d.Status.Progression)
				}
				seen <- s
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	z.t.Cleanup(func() { close(done) })
	return func() []drv1alpha1.ProgressionStatus {
		s := <-seen
		seen <- s
		return s
	}
}

// waitEvent waits for an event on the DRPC with reason and a message
// containing part.
func (z *vsZone) waitEvent(reason, part string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, "event "+reason, func() error {
		list := &corev1.EventList{}
		if err := z.Client(env.Quorum).List(ctx, list, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		var msgs []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name == vsApp && e.Reason == reason {
				if strings.Contains(e.Message, part) {
					return nil
				}
				msgs = append(msgs, e.Message)
			}
		}
		return fmt.Errorf("events %q", msgs)
	})
}

// gauges are the values of the monitor's series of a protection group, by
// metric name, from the registry quorum-manager exports.
func gauges(t *testing.T, group string) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "protection_group" && l.GetValue() == group && m.GetGauge() != nil {
					out[f.GetName()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}
