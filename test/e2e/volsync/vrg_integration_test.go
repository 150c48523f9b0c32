package volsync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
	"github.com/siterecovery/siterecovery/internal/workload/vrg"
	"github.com/siterecovery/siterecovery/test/sim/mover"
)

// vrgPath: a primary VRG of a VolSync peer class creates the group's RGS on
// its schedule, a secondary VRG carrying the primary's PVCs creates the RGD;
// the secondary's images equal the primary's data, and both VRGs report
// protected PVCs, DataProtected and lastGroupSyncTime.
func vrgPath(t *testing.T, z *zone, ns string, diff bool) {
	ctx := t.Context()
	g := &group{z: z, t: t, ns: ns}
	for _, c := range []client.Client{z.primary, z.secondary} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	for i := range 2 {
		name := fmt.Sprintf("disk-%d", i)
		g.pvcs = append(g.pvcs, name)
		pvc := newPVC(ns, name, storageClass)
		pvc.Labels = map[string]string{"app": ns}
		require.NoError(t, z.primary.Create(ctx, pvc))
		z.data.Fill(g.volume(name), uint64(i+7))
	}
	spec := drv1alpha1.VolumeReplicationGroupSpec{
		PVCSelector:      metav1.LabelSelector{MatchLabels: map[string]string{"app": ns}},
		ReplicationState: drv1alpha1.Primary,
		Async: &drv1alpha1.VRGAsyncSpec{SchedulingInterval: "1h",
			PeerClasses: []drv1alpha1.PeerClass{{StorageClassName: storageClass}}},
	}
	var annotations map[string]string
	if diff {
		annotations = map[string]string{drv1alpha1.EnableDiffAnnotation: "true"}
	}
	require.NoError(t, z.primary.Create(ctx, &drv1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, Annotations: annotations}, Spec: spec}))

	// Without the pre-shared key, which the quorum tier copies to both
	// clusters, the VRG waits and says for what; it never mints its own.
	waitVRG(t, z.primary, ns, func(v *drv1alpha1.VolumeReplicationGroup) error {
		c := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionDataReady)
		if c == nil || !strings.Contains(c.Message, "pre-shared-key Secret app-vs-secret") {
			return fmt.Errorf("DataReady %+v", c)
		}
		return nil
	})
	z.shareKey(t, ns, drv1alpha1.VolSyncPSKSecretName("app"))

	// The RGS: the schedule from the interval, the group's PVCs by the
	// consistency-group label, the diff annotation, and the key Secret.
	eventually(t, "the VRG's RGS", func() error {
		list := &drv1alpha1.ReplicationGroupSourceList{}
		if err := z.primary.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{vrg.VolSyncVRGLabel: "app"}); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d RGSs", len(list.Items))
		}
		g.name = list.Items[0].Name
		return nil
	})
	src := g.source()
	require.Equal(t, "0 */1 * * *", ptr.Deref(src.Spec.Trigger.Schedule, ""))
	require.Equal(t, groupClass, src.Spec.VolumeGroupSnapshotClassName)
	require.Equal(t, storageClass, src.Spec.VolumeGroupSnapshotSource.MatchLabels[drv1alpha1.ConsistencyGroupLabel])
	if diff {
		require.Equal(t, "true", src.Annotations[drv1alpha1.EnableDiffAnnotation])
	}
	require.Equal(t, "app", src.Labels[volsync.VRGLabel], "the movers use the VRG's key Secret")

	// The secondary VRG gets the primary's protected PVCs as RD specs, as the
	// quorum tier writes them.
	primaryVRG := waitVRG(t, z.primary, ns, func(v *drv1alpha1.VolumeReplicationGroup) error {
		if len(v.Status.ProtectedPVCs) != 2 {
			return fmt.Errorf("%d protected PVCs", len(v.Status.ProtectedPVCs))
		}
		return nil
	})
	var rdSpecs []drv1alpha1.VolSyncReplicationDestinationSpec
	for _, p := range primaryVRG.Status.ProtectedPVCs {
		require.True(t, p.ProtectedByVolSync)
		require.Equal(t, map[string]string{"app": ns}, p.Labels, "the application's labels, not the consistency-group label")
		require.Equal(t, corev1.PersistentVolumeFilesystem, ptr.Deref(p.VolumeMode, ""), "the PVC's volumeMode, for the receiving PVC")
		rdSpecs = append(rdSpecs, drv1alpha1.VolSyncReplicationDestinationSpec{ProtectedPVC: drv1alpha1.VolSyncProtectedPVC{
			Name: p.Name, Namespace: ns, StorageClassName: ptr.To(p.StorageClassName), Labels: p.Labels, AccessModes: p.AccessModes, Resources: p.Resources,
			VolumeMode: p.VolumeMode,
		}})
	}
	secondary := spec.DeepCopy()
	secondary.ReplicationState = drv1alpha1.Secondary
	secondary.VolSync = &drv1alpha1.VRGVolSyncSpec{RDSpecs: rdSpecs}
	require.NoError(t, z.secondary.Create(ctx, &drv1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, Annotations: annotations}, Spec: *secondary}))
	relayDestinations(t, z, ns)

	// The first cycle runs at once.
	want := g.primarySums()
	eventually(t, "first cycle's images", func() error { return sumsEqual(g, want) })
	waitProtected(t, z, g)

	// A final sync (a relocate's, once the application stopped) replaces the
	// schedule: FinalSynced says when every group has sent the last writes.
	g.change(0.01, 4)
	want = g.primarySums()
	setFinalSync(t, z.primary, ns, "final-1")
	waitVRG(t, z.primary, ns, func(v *drv1alpha1.VolumeReplicationGroup) error {
		if c := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionFinalSynced); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("FinalSynced %+v", c)
		}
		return nil
	})
	eventually(t, "the final sync's images", func() error { return sumsEqual(g, want) })
	waitProtected(t, z, g)
	setFinalSync(t, z.primary, ns, "")
	eventually(t, "the schedule back", func() error {
		if tr := g.source().Spec.Trigger; tr.Schedule == nil || tr.Manual != "" {
			return fmt.Errorf("trigger %+v", tr)
		}
		return nil
	})

	// Rollback: a sync stalls halfway through disk-0 while disk-1's completes,
	// so both received PVCs differ from the group's last complete image. The
	// secondary VRG turned primary (a failover) first rolls each PVC back to
	// that image: a full copy, or in diff mode only the blocks that differ.
	last, err := g.imageSums()
	require.NoError(t, err)
	z.mover.SetFault(ns, "disk-0", &mover.Fault{Stall: true})
	t.Cleanup(func() { z.mover.SetFault(ns, "disk-0", nil) })
	g.change(0.05, 5)
	setFinalSync(t, z.primary, ns, "stalls")
	eventually(t, "both received PVCs changed", func() error {
		for _, p := range g.pvcs {
			if got := z.data.Checksum(g.received(p)); got == last[p] {
				return fmt.Errorf("PVC %s still holds the last image", p)
			}
		}
		return nil
	})
	eventually(t, "failover of the secondary VRG", func() error {
		v := &drv1alpha1.VolumeReplicationGroup{}
		if err := z.secondary.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, v); err != nil {
			return err
		}
		before := v.DeepCopy()
		v.Spec.ReplicationState, v.Spec.Action, v.Spec.VolSync = drv1alpha1.Primary, drv1alpha1.ActionFailover, nil
		return z.secondary.Patch(ctx, v, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
	g.rolledBack(t, ns, last, diff)
	rollbackLeft := &corev1.PersistentVolumeClaimList{}
	require.NoError(t, z.secondary.List(ctx, rollbackLeft, client.InNamespace(ns), client.MatchingLabels{vrg.RollbackLabel: "app"}))
	require.Empty(t, rollbackLeft.Items, "the rollback cleans up")
}

// relayDestinations copies the addresses the secondary VRG reports for its
// destinations into the primary VRG's spec.volSync.destinations, as the
// quorum tier does, once every PVC has one.
func relayDestinations(t *testing.T, z *zone, ns string) {
	t.Helper()
	var dsts []drv1alpha1.VolSyncDestination
	waitVRG(t, z.secondary, ns, func(v *drv1alpha1.VolumeReplicationGroup) error {
		dsts = nil
		for _, p := range v.Status.ProtectedPVCs {
			if p.DestinationAddress != "" {
				dsts = append(dsts, drv1alpha1.VolSyncDestination{PVCName: p.Name, Address: p.DestinationAddress})
			}
		}
		if len(dsts) != 2 {
			return fmt.Errorf("protected PVCs %+v", v.Status.ProtectedPVCs)
		}
		return nil
	})
	eventually(t, "the primary's destinations", func() error {
		v := &drv1alpha1.VolumeReplicationGroup{}
		if err := z.primary.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, v); err != nil {
			return err
		}
		before := v.DeepCopy()
		if v.Spec.VolSync == nil {
			v.Spec.VolSync = &drv1alpha1.VRGVolSyncSpec{}
		}
		v.Spec.VolSync.Destinations = dsts
		return z.primary.Patch(context.Background(), v, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
}

func setFinalSync(t *testing.T, c client.Client, ns, value string) {
	t.Helper()
	eventually(t, "finalSync "+value, func() error {
		v := &drv1alpha1.VolumeReplicationGroup{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, v); err != nil {
			return err
		}
		before := v.DeepCopy()
		if v.Spec.VolSync == nil {
			v.Spec.VolSync = &drv1alpha1.VRGVolSyncSpec{}
		}
		v.Spec.VolSync.FinalSync = value
		return c.Patch(context.Background(), v, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
}

func sumsEqual(g *group, want map[string]string) error {
	got, err := g.imageSums()
	if err != nil {
		return err
	}
	for p, sum := range want {
		if got[p] != sum {
			return fmt.Errorf("PVC %s: image %s, want %s", p, got[p], sum)
		}
	}
	return nil
}

func waitVRG(t *testing.T, c client.Client, ns string, ok func(*drv1alpha1.VolumeReplicationGroup) error) *drv1alpha1.VolumeReplicationGroup {
	t.Helper()
	v := &drv1alpha1.VolumeReplicationGroup{}
	eventually(t, "VRG "+ns+"/app", func() error {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, v); err != nil {
			return err
		}
		return ok(v)
	})
	return v
}

// waitProtected waits until both VRGs report DataProtected, their two PVCs
// and the lastGroupSyncTime of their group's half (the RGS on the primary, the
// RGD on the secondary).
func waitProtected(t *testing.T, z *zone, g *group) {
	t.Helper()
	halves := map[client.Client]func() (*metav1.Time, error){
		z.primary: func() (*metav1.Time, error) { return g.source().Status.LastSyncTime, nil },
		z.secondary: func() (*metav1.Time, error) {
			d := &drv1alpha1.ReplicationGroupDestination{}
			err := z.secondary.Get(context.Background(), client.ObjectKey{Namespace: g.ns, Name: g.name}, d)
			return d.Status.LastSyncTime, err
		},
	}
	for c, half := range halves {
		v := waitVRG(t, c, g.ns, func(v *drv1alpha1.VolumeReplicationGroup) error {
			cond := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionDataProtected)
			want, err := half()
			switch last := v.Status.LastGroupSyncTime; {
			case err != nil:
				return err
			case cond == nil || cond.Status != metav1.ConditionTrue:
				return fmt.Errorf("DataProtected %+v", cond)
			case last == nil || want == nil || !last.Equal(want):
				return fmt.Errorf("lastGroupSyncTime %v, the group's %v", last, want)
			case len(v.Status.ProtectedPVCs) != 2:
				return fmt.Errorf("%d protected PVCs", len(v.Status.ProtectedPVCs))
			}
			return nil
		})
		require.Contains(t, []drv1alpha1.State{drv1alpha1.PrimaryState, drv1alpha1.SecondaryState}, v.Status.State)
	}
}
