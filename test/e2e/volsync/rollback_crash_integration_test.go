package volsync_test

import (
	"context"
	"fmt"
	"testing"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
	"github.com/siterecovery/siterecovery/internal/workload/vrg"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/sim/mover"
)

// rollbackCrash: pg-controller on the new primary is killed in each step of a
// failover's rollback that waits (the current state's snapshot, diff mode
// only; the local destination's address; the PVC restored from the image; the
// local sync), each after the group's destination was paused, and started
// again. The rollback resumes from what it finds: each PVC ends at the
// group's last complete image, sent once (in diff mode only the differing
// blocks), and nothing of the rollback is left.
func rollbackCrash(t *testing.T, z *zone, ns string, diff bool) {
	ctx := t.Context()
	g := z.vrgPair(t, ns, diff)
	last, err := g.imageSums()
	require.NoError(t, err)
	images := g.imageNames()

	// A sync stalls halfway on disk-0 and completes on disk-1: both received
	// PVCs differ from the last complete image.
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

	// With the new primary's simulators stopped, the rollback holds in each
	// step that waits for them, with the step's object created: there
	// pg-controller is killed and started again, and the step resumes from what
	// it finds. Then the simulators run until the step's wait is over, and
	// stop before the next poll of the rollback.
	rbSource := func() *volsyncv1alpha1.ReplicationSource {
		rs := &volsyncv1alpha1.ReplicationSource{}
		if z.secondary.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rb-disk-0"}, rs) != nil {
			return nil
		}
		return rs
	}
	steps := []struct {
		name         string
		held, passed func() error
		diffModeOnly bool
	}{
		{name: "current state snapshotted", diffModeOnly: true,
			held: func() error {
				if !rdPaused(ctx, z.secondary, ns, "disk-0") {
					return fmt.Errorf("the group's destination is not paused")
				}
				return present(ctx, z.secondary, ns, "rb-disk-0-base", &snapshotv1.VolumeSnapshot{})
			},
			passed: func() error {
				vs := &snapshotv1.VolumeSnapshot{}
				if err := z.secondary.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rb-disk-0-base"}, vs); err != nil {
					return err
				}
				if vs.Status == nil || !ptr.Deref(vs.Status.ReadyToUse, false) {
					return fmt.Errorf("snapshot not ready")
				}
				return nil
			}},
		{name: "local destination created",
			held: func() error {
				return present(ctx, z.secondary, ns, "rb-disk-0", &volsyncv1alpha1.ReplicationDestination{})
			},
			passed: func() error {
				rd := &volsyncv1alpha1.ReplicationDestination{}
				if err := z.secondary.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rb-disk-0"}, rd); err != nil {
					return err
				}
				if rd.Status == nil || rd.Status.RsyncTLS == nil || ptr.Deref(rd.Status.RsyncTLS.Address, "") == "" {
					return fmt.Errorf("no address")
				}
				return nil
			}},
		{name: "PVC restored from the image",
			held: func() error { return present(ctx, z.secondary, ns, "rb-disk-0-src", &corev1.PersistentVolumeClaim{}) },
			passed: func() error {
				pvc := &corev1.PersistentVolumeClaim{}
				if err := z.secondary.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rb-disk-0-src"}, pvc); err != nil {
					return err
				}
				if pvc.Status.Phase != corev1.ClaimBound {
					return fmt.Errorf("phase %q", pvc.Status.Phase)
				}
				return nil
			}},
		{name: "local source triggered",
			held: func() error {
				if rbSource() == nil {
					return fmt.Errorf("no local source")
				}
				return nil
			},
			passed: func() error {
				if rs := rbSource(); rs == nil || rs.Status == nil || rs.Status.LastManualSync == "" {
					return fmt.Errorf("local sync not done")
				}
				return nil
			}},
	}
	z.simStops[harness.DR]()
	eventually(t, "failover of the secondary VRG", func() error {
		v := &drv1alpha1.VolumeReplicationGroup{}
		if err := z.secondary.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, v); err != nil {
			return err
		}
		before := v.DeepCopy()
		v.Spec.ReplicationState, v.Spec.Action, v.Spec.VolSync = drv1alpha1.Primary, drv1alpha1.ActionFailover, nil
		return z.secondary.Patch(ctx, v, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
	for _, st := range steps {
		if st.diffModeOnly && !diff {
			continue
		}
		eventually(t, "held at "+st.name, st.held)
		z.stops[harness.DR]()
		z.startControllers(t, harness.DR)
		eventually(t, "still held at "+st.name+" after the restart", st.held)
		z.startSims(t, harness.DR)
		eventually(t, "past "+st.name, st.passed)
		z.simStops[harness.DR]()
	}
	// The rest (pause the local destination, record the image, clean up)
	// runs in one reconcile; a crash there is a crash after the sync, which
	// the last restart covers. Deleting snapshots needs the simulators.
	z.stops[harness.DR]()
	z.startControllers(t, harness.DR)
	z.startSims(t, harness.DR)

	g.rolledBack(t, ns, last, diff)
	waitNoRollbackLeft(t, z.secondary, ns)

	// The former secondary's images go with its destinations: the PVCs are
	// the application's now, and each image would hold a copy of one.
	eventually(t, "the received images deleted", func() error {
		for _, name := range images {
			if err := present(ctx, z.secondary, ns, name, &snapshotv1.VolumeSnapshot{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("image %s: %w", name, err)
			}
		}
		kept := &snapshotv1.VolumeSnapshotList{}
		if err := z.secondary.List(ctx, kept, client.InNamespace(ns), client.HasLabels{volsync.RGDLabel}); err != nil {
			return err
		}
		if len(kept.Items) > 0 {
			return fmt.Errorf("%d images of a destination left", len(kept.Items))
		}
		return nil
	})
}

// imageNames are the snapshots of the group's recorded images.
func (g *group) imageNames() []string {
	g.t.Helper()
	d := &drv1alpha1.ReplicationGroupDestination{}
	require.NoError(g.t, g.z.secondary.Get(context.Background(), client.ObjectKey{Namespace: g.ns, Name: g.name}, d))
	var out []string
	for _, li := range d.Status.LatestImages {
		out = append(out, li.Snapshot.Name)
	}
	require.NotEmpty(g.t, out)
	return out
}

// waitNoRollbackLeft waits until no object of the VRG's rollback remains: the
// rollback deletes them as its last step, and a deleted PVC or snapshot may
// take a moment to go.
func waitNoRollbackLeft(t *testing.T, c client.Client, ns string) {
	t.Helper()
	mine := client.MatchingLabels{vrg.RollbackLabel: "app"}
	eventually(t, "no object of the rollback left", func() error {
		lists := map[string]client.ObjectList{
			"PVCs":                    &corev1.PersistentVolumeClaimList{},
			"VolumeSnapshots":         &snapshotv1.VolumeSnapshotList{},
			"ReplicationSources":      &volsyncv1alpha1.ReplicationSourceList{},
			"ReplicationDestinations": &volsyncv1alpha1.ReplicationDestinationList{},
		}
		for kind, list := range lists {
			if err := c.List(context.Background(), list, client.InNamespace(ns), mine); err != nil {
				return err
			}
			if n := meta.LenList(list); n > 0 {
				return fmt.Errorf("%d rollback %s left", n, kind)
			}
		}
		return nil
	})
}

// vrgPair is a group protected by a primary VRG with two PVCs and a secondary
// VRG receiving them, as the quorum tier sets them up, after its first cycle.
func (z *zone) vrgPair(t *testing.T, ns string, diff bool) *group {
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
	z.shareKey(t, ns, drv1alpha1.VolSyncPSKSecretName("app"))
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
	primaryVRG := waitVRG(t, z.primary, ns, func(v *drv1alpha1.VolumeReplicationGroup) error {
		if len(v.Status.ProtectedPVCs) != 2 {
			return fmt.Errorf("%d protected PVCs", len(v.Status.ProtectedPVCs))
		}
		return nil
	})
	list := &drv1alpha1.ReplicationGroupSourceList{}
	require.NoError(t, z.primary.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{vrg.VolSyncVRGLabel: "app"}))
	require.Len(t, list.Items, 1)
	g.name = list.Items[0].Name
	var rdSpecs []drv1alpha1.VolSyncReplicationDestinationSpec
	for _, p := range primaryVRG.Status.ProtectedPVCs {
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
	want := g.primarySums()
	eventually(t, "first cycle's images", func() error { return sumsEqual(g, want) })
	waitProtected(t, z, g)
	return g
}

// present reports whether the object exists, as an error for eventually.
func present(ctx context.Context, c client.Client, ns, name string, obj client.Object) error {
	return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
}

func rdPaused(ctx context.Context, c client.Client, ns, name string) bool {
	rd := &volsyncv1alpha1.ReplicationDestination{}
	return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rd) == nil && rd.Spec.Paused
}
