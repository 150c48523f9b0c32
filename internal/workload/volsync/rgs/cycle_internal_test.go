package rgs

import (
	"context"
	"testing"
	"time"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// The unit tests of this package's decisions run on controller-runtime's fake
// client: what a cycle reads and writes, not how an API server serves it
// (test/e2e/volsync runs the flows on real ones).

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// testScheme is built once: building it is most of a fake client's cost.
var testScheme = scheme.New()

func newRGS(manual string) *drv1alpha1.ReplicationGroupSource {
	return &drv1alpha1.ReplicationGroupSource{
		ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", UID: "rgs-uid", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Spec: drv1alpha1.ReplicationGroupSourceSpec{Trigger: &drv1alpha1.ReplicationSourceTriggerSpec{Manual: manual},
			VolumeGroupSnapshotSource: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	}
}

func newVGS(name, rgs, status string, created time.Time) *groupsnapshotv1.VolumeGroupSnapshot {
	return &groupsnapshotv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created),
		Labels:      map[string]string{volsync.RGSLabel: rgs, drv1alpha1.VGSStatusLabel: status},
		Annotations: map[string]string{volsync.ManualTriggerAnnotation: "m-" + name}}}
}

func fakeReconciler(objs ...client.Object) (*Reconciler, client.Client) {
	c := fake.NewClientBuilder().WithScheme(testScheme).WithObjects(objs...).
		WithStatusSubresource(&srv1alpha1.ProtectionGroup{}).Build()
	return &Reconciler{Client: c, APIReader: c}, c
}

// A cycle is due when trigger.manual differs from the last one synced, or when
// the schedule fired since the last cycle started; a schedule that cannot be
// parsed stalls the group (only a spec change fixes it).
func TestWhenACycleIsDue(t *testing.T) {
	r := &Reconciler{}
	due := func(g *drv1alpha1.ReplicationGroupSource, now time.Time) (bool, time.Duration, error) {
		t.Helper()
		d, res, err := r.due(&scope{rgs: g, now: now})
		return d, res.RequeueAfter, err
	}
	g := newRGS("2")
	g.Status.LastManualSync = "1"
	d, _, err := due(g, t0)
	require.NoError(t, err)
	require.True(t, d, "a new manual trigger starts a cycle")
	g.Status.LastManualSync = "2"
	d, _, _ = due(g, t0)
	require.False(t, d, "the manual trigger already synced starts nothing")
	g.Spec.Trigger = nil
	d, _, _ = due(g, t0)
	require.False(t, d, "no trigger, no cycle")

	g.Spec.Trigger = &drv1alpha1.ReplicationSourceTriggerSpec{Schedule: ptr.To("*/10 * * * *")}
	d, _, _ = due(g, t0)
	require.True(t, d, "a schedule never run starts at once")
	g.Status.LastSyncStartTime = &metav1.Time{Time: t0}
	d, after, err := due(g, t0.Add(3*time.Minute))
	require.NoError(t, err)
	require.False(t, d)
	require.Equal(t, 7*time.Minute, after, "looked at again when the schedule fires")
	require.Equal(t, t0.Add(10*time.Minute), g.Status.NextSyncTime.Time)
	d, _, _ = due(g, t0.Add(10*time.Minute))
	require.True(t, d, "the schedule fired since the last start")

	g.Spec.Trigger.Schedule = ptr.To("every ten minutes")
	_, _, err = due(g, t0)
	require.True(t, flow.As(err).Terminal(), "an unparsable schedule is Stalled: %v", err)
}

// Which snapshot is the cycle's: a snapshot labelled current of this group
// (a restart right after taking it) is adopted, so that the cycle is not
// taken twice; one being deleted (the last cycle's, whose members the
// snapshot-controller still deletes) and another group's are not.
func TestScheduleAdoptsTheCurrentSnapshot(t *testing.T) {
	deleting := newVGS("g-old", "g", drv1alpha1.VGSStatusCurrent, t0.Add(-2*time.Minute))
	deleting.DeletionTimestamp, deleting.Finalizers = &metav1.Time{Time: t0}, []string{"test/hold"}
	other := newVGS("h-cur", "h", drv1alpha1.VGSStatusCurrent, t0.Add(-time.Minute))
	start := func(objs ...client.Object) string {
		t.Helper()
		r, _ := fakeReconciler(objs...)
		s := &scope{rgs: newRGS("2"), now: t0}
		_, err := r.schedule(context.Background(), s)
		require.NoError(t, err)
		require.Equal(t, t0, s.rgs.Status.LastSyncStartTime.Time)
		return s.cycle()
	}
	require.Equal(t, "g-taken", start(deleting, other, newVGS("g-taken", "g", drv1alpha1.VGSStatusCurrent, t0.Add(-time.Minute))))
	name := start(deleting, other)
	require.NotContains(t, []string{"g-old", "h-cur", ""}, name, "a new cycle gets a name of its own")
	require.Regexp(t, `^g-[a-z0-9]{5}$`, name)

	r, _ := fakeReconciler()
	s := &scope{rgs: newRGS("2"), now: t0}
	s.rgs.Status.CurrentVolumeGroupSnapshot = "g-running"
	_, err := r.schedule(context.Background(), s)
	require.NoError(t, err)
	require.Equal(t, "g-running", s.cycle(), "a cycle in progress continues")
}

// A cycle is complete only when every PVC's ReplicationSource reports the
// cycle's trigger as synced; a failing source is named, and a PVC without a
// destination address gets no source at all.
func TestCycleCompletesWhenEverySourceReportsIt(t *testing.T) {
	source := func(pvc, synced string, failed bool) *volsyncv1alpha1.ReplicationSource {
		rs := &volsyncv1alpha1.ReplicationSource{ObjectMeta: metav1.ObjectMeta{Name: pvc, Namespace: "ns"},
			Status: &volsyncv1alpha1.ReplicationSourceStatus{LastManualSync: synced}}
		if failed {
			rs.Status.LatestMoverStatus = &volsyncv1alpha1.MoverStatus{Result: volsyncv1alpha1.MoverResultFailed, Logs: "starting\nconnection refused\n"}
		}
		return rs
	}
	run := func(objs ...client.Object) (*scope, client.Client, error) {
		t.Helper()
		r, c := fakeReconciler(objs...)
		g := newRGS("2")
		g.Status.CurrentVolumeGroupSnapshot = "g-cycle"
		g.Spec.Destinations = []drv1alpha1.VolSyncDestination{{PVCName: "disk-0", Address: "10.0.0.1"}, {PVCName: "disk-1", Address: "10.0.0.2"}}
		s := &scope{rgs: g, now: t0, members: map[string]string{"disk-0": "snap-0", "disk-1": "snap-1"},
			storageClass: &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc"}, Provisioner: "csi.example.com"}}
		_, err := r.replicate(context.Background(), s)
		return s, c, err
	}

	s, c, err := run()
	require.Equal(t, srv1alpha1.ReasonSyncing, flow.ReasonOf(err, ""), "%v", err)
	require.Len(t, s.rgs.Status.ReplicationSources, 2)
	rs := &volsyncv1alpha1.ReplicationSource{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "disk-1"}, rs))
	require.Equal(t, "g-cycle", rs.Spec.Trigger.Manual, "triggered with the cycle's name")
	require.Equal(t, volsync.RestoredPVCName("disk-1"), rs.Spec.SourcePVC, "sends the restored copy, not the live PVC")
	require.Equal(t, "10.0.0.2", *rs.Spec.RsyncTLS.Address)

	_, _, err = run(source("disk-0", "g-cycle", false), source("disk-1", "g-before", false))
	require.ErrorContains(t, err, "1 of 2 PVCs synced, waiting for disk-1", "a source still at the last cycle is pending")
	_, _, err = run(source("disk-0", "g-cycle", false), source("disk-1", "g-before", true))
	require.Equal(t, ReasonSourceFailing, flow.ReasonOf(err, ""))
	require.ErrorContains(t, err, "PVC disk-1: the mover failed: connection refused")
	s, _, err = run(source("disk-0", "g-cycle", false), source("disk-1", "g-cycle", false))
	require.NoError(t, err)
	require.Equal(t, 2, s.synced)

	r, c := fakeReconciler()
	g := newRGS("2")
	g.Status.CurrentVolumeGroupSnapshot = "g-cycle"
	g.Spec.Destinations = []drv1alpha1.VolSyncDestination{{PVCName: "disk-0", Address: "10.0.0.1"}}
	_, err = r.replicate(context.Background(), &scope{rgs: g, members: map[string]string{"disk-0": "snap-0", "disk-1": "snap-1"}})
	require.Equal(t, ReasonNoDestinationAddress, flow.ReasonOf(err, ""))
	require.ErrorContains(t, err, "disk-1")
	require.True(t, apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "disk-0"}, rs)),
		"no source sends before every PVC has an address")
}

// Retention: a complete cycle deletes its restored PVCs; in diff mode it keeps
// its own snapshot, labelled previous (the next cycle's base), and deletes
// the older ones; without diff it keeps none. It records the manual trigger
// its snapshot was taken for, not the one the spec names now.
func TestCompleteKeepsOnlyTheBaseOfTheNextCycle(t *testing.T) {
	for _, diff := range []bool{true, false} {
		older := newVGS("g-older", "g", drv1alpha1.VGSStatusPrevious, t0.Add(-time.Hour))
		cycle := newVGS("g-cycle", "g", drv1alpha1.VGSStatusCurrent, t0.Add(-time.Minute))
		otherGroup := newVGS("h-prev", "h", drv1alpha1.VGSStatusPrevious, t0.Add(-time.Hour))
		restored := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: volsync.RestoredPVCName("disk-0"), Namespace: "ns",
			Labels: map[string]string{volsync.RGSLabel: "g"}}}
		r, c := fakeReconciler(older, cycle, otherGroup, restored)
		g := newRGS("3") // moved on during the cycle
		g.Status.CurrentVolumeGroupSnapshot = cycle.Name
		g.Status.LastSyncStartTime = &metav1.Time{Time: t0.Add(-time.Minute)}
		s := &scope{rgs: g, now: t0, diff: diff, vgs: cycle, members: map[string]string{"disk-0": "snap-0"}}
		res, err := r.complete(context.Background(), s)
		require.NoError(t, err)

		kept := map[string]string{}
		list := &groupsnapshotv1.VolumeGroupSnapshotList{}
		require.NoError(t, c.List(context.Background(), list))
		for _, v := range list.Items {
			kept[v.Name] = v.Labels[drv1alpha1.VGSStatusLabel]
		}
		st := g.Status
		if diff {
			require.Equal(t, map[string]string{"g-cycle": drv1alpha1.VGSStatusPrevious, "h-prev": drv1alpha1.VGSStatusPrevious}, kept)
			require.Equal(t, "g-cycle", st.PreviousVolumeGroupSnapshot)
		} else {
			require.Equal(t, map[string]string{"h-prev": drv1alpha1.VGSStatusPrevious}, kept, "without diff only the other group's snapshot is left")
			require.Empty(t, st.PreviousVolumeGroupSnapshot)
		}
		require.True(t, apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKeyFromObject(restored), &corev1.PersistentVolumeClaim{})))
		require.Empty(t, st.CurrentVolumeGroupSnapshot)
		require.Equal(t, "m-g-cycle", st.LastManualSync, "the trigger the snapshot was taken for")
		require.Equal(t, time.Minute, st.LastSyncDuration.Duration)
		require.Positive(t, res.RequeueAfter, "trigger 3 is due: the next cycle starts at once")
	}
}
