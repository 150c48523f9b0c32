package volsync_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
	"github.com/siterecovery/siterecovery/test/benchpair"
	"github.com/siterecovery/siterecovery/test/harness"
)

// 1 GiB simulated volumes: 16384 blocks of 64 KiB.
const (
	benchBlockSize = 64 << 10
	benchBlocks    = 16384
	benchChange    = 0.01
	// benchPoll is how often both sides of a pair look for the end of a cycle.
	benchPoll = 5 * time.Millisecond
)

// BenchmarkGroupCycle8PVCs measures one diff-mode cycle of a consistency
// group of 8 PVCs of 1 GiB with zero-delay simulators:
//
//	go test ./test/e2e/volsync -run '^$' -bench 'GroupCycle' -benchtime 1x -v
//
// It reports diff-pct-of-full, the bytes a cycle moves after 1 % of the
// blocks changed as a percent of the first (full) cycle's, and the
// control-plane time of a cycle, from the trigger to lastSyncTime, pair by
// pair against a floor (benchpair): a plain client making the same cycle's
// writes (group snapshot, restored PVCs, source triggers, cleanup, one status
// write) on a second group of the same servers. Both sides read through one
// informer cache, and it logs the writes per cycle of each: the controllers'
// (their client transport counts them) against the floor client's.
// BenchmarkGroupCycle64PVCs is
// its scale point: how both grow with the group.
func BenchmarkGroupCycle8PVCs(b *testing.B) { benchCycle(b, 8, 6) }

func BenchmarkGroupCycle64PVCs(b *testing.B) { benchCycle(b, 64, 4) }

func benchCycle(b *testing.B, pvcs, pairs int) {
	z := startZoneWith(b, benchBlockSize, benchBlocks)
	diff := map[string]string{drv1alpha1.EnableDiffAnnotation: "true"}
	g := z.newGroup(b, "bench", pvcs, diff)
	g.trigger("full")
	g.waitSynced("full")
	full := sum(g.lastBytes())
	changed := g.change(benchChange, 1)
	g.trigger("diff")
	g.waitSynced("diff")
	moved := sum(g.lastBytes())
	var blocks int64
	for _, n := range changed {
		blocks += int64(n)
	}
	if moved != blocks*benchBlockSize {
		b.Fatalf("the diff cycle moved %d bytes, the changed blocks are %d bytes", moved, blocks*benchBlockSize)
	}
	b.Logf("%d PVCs of %d MiB: full cycle %d MiB, diff cycle at %.0f%% changed blocks %.1f MiB (%.2f%% of full)",
		pvcs, z.data.Size()>>20, full>>20, 100*benchChange, float64(moved)/(1<<20), 100*float64(moved)/float64(full))

	// Both sides look for the end of a cycle through one informer cache, as
	// a controller reads.
	reads := z.sharedCache(b)
	f := z.newFloor(b, "bench-floor", pvcs, reads)
	f.cycle(b, "warm-up") // the full sync, outside the pairs
	f.settle(b)
	f.cycle(b, "warm-up-diff")
	productWrites := newWindowCounts(z.writes[harness.Primary], z.writes[harness.DR])
	floorWrites := newWindowCounts(f.writes, z.writes[harness.DR])
	floor := func(i int, m *benchpair.Meter) {
		f.settle(b)
		f.g.change(benchChange, uint64(100+i))
		floorWrites.open()
		m.Start()
		f.cycle(b, fmt.Sprintf("fl-%d", i))
		m.Stop()
		floorWrites.close()
	}
	product := func(i int, m *benchpair.Meter) {
		g.change(benchChange, uint64(200+i))
		manual := fmt.Sprintf("c-%d", i)
		productWrites.open()
		m.Start()
		g.trigger(manual)
		poll(b, "cycle "+manual, func() bool {
			s := &drv1alpha1.ReplicationGroupSource{}
			err := reads.Get(context.Background(), client.ObjectKey{Namespace: g.ns, Name: g.name}, s)
			return err == nil && s.Status.LastManualSync == manual && s.Status.LastSyncTime != nil && s.Status.CurrentVolumeGroupSnapshot == ""
		})
		m.Stop()
		productWrites.close()
	}
	benchpair.Run(b, benchpair.Options{Pairs: pairs, Unit: "cycle"}, floor, product)
	// Writes from the trigger to lastSyncTime; events sent after it are not
	// in the window. The trigger itself is the benchmark's, not counted.
	b.Logf("%d PVCs: writes per cycle, product: primary %.1f (%s), secondary %.1f (%s)", pvcs,
		productWrites.perRound(0), productWrites.detail(0), productWrites.perRound(1), productWrites.detail(1))
	b.Logf("%d PVCs: writes per cycle, floor: primary %.1f (%s), secondary %.1f (%s)", pvcs,
		floorWrites.perRound(0), floorWrites.detail(0), floorWrites.perRound(1), floorWrites.detail(1))
	// After Run: its ResetTimer deletes the metrics reported before.
	b.ReportMetric(100*float64(moved)/float64(full), "diff-pct-of-full")
	b.ReportMetric(float64(full)/(1<<20), "full-MiB")
	b.ReportMetric(float64(moved)/(1<<20), "diff-MiB")
	b.ReportMetric(productWrites.perRound(0)+productWrites.perRound(1), "writes/cycle")
	b.ReportMetric(floorWrites.perRound(0)+floorWrites.perRound(1), "floor-writes/cycle")
}

// sharedCache is an informer cache of the primary, started for the rest of
// the benchmark.
func (z *zone) sharedCache(b testing.TB) client.Reader {
	c, err := cache.New(z.configs[harness.Primary], cache.Options{Scheme: scheme.New()})
	must(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("the shared cache did not sync")
	}
	return c
}

// windowCounts adds up, per counter, the writes counted inside open/close
// windows.
type windowCounts struct {
	counters []*writeCounter
	rounds   int
	totals   []int
	by       []map[string]int
	atTotal  []int
	atBy     []map[string]int
}

func newWindowCounts(counters ...*writeCounter) *windowCounts {
	w := &windowCounts{counters: counters, totals: make([]int, len(counters)), atTotal: make([]int, len(counters)),
		by: make([]map[string]int, len(counters)), atBy: make([]map[string]int, len(counters))}
	for i := range counters {
		w.by[i] = map[string]int{}
	}
	return w
}

func (w *windowCounts) open() {
	for i, c := range w.counters {
		w.atTotal[i], w.atBy[i] = c.snapshot()
	}
}

func (w *windowCounts) close() {
	w.rounds++
	for i, c := range w.counters {
		total, by := c.snapshot()
		w.totals[i] += total - w.atTotal[i]
		for k, v := range by {
			w.by[i][k] += v - w.atBy[i][k]
		}
	}
}

func (w *windowCounts) perRound(i int) float64 {
	if w.rounds == 0 {
		return 0
	}
	return float64(w.totals[i]) / float64(w.rounds)
}

func (w *windowCounts) detail(i int) string {
	var parts []string
	for k, v := range w.by[i] {
		if v > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1f", k, float64(v)/float64(max(w.rounds, 1))))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func sum(m map[string]int64) int64 {
	var t int64
	for _, v := range m {
		t += v
	}
	return t
}

// poll waits for done, looking every benchPoll.
func poll(b testing.TB, what string, done func() bool) {
	b.Helper()
	deadline := time.Now().Add(wait)
	for !done() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(benchPoll)
	}
}

// floorGroup is a group with PVCs, a key and an RGD on the secondary, and no
// RGS: the floor's plain client runs its cycles.
type floorGroup struct {
	g        *group
	previous string
	// c writes, counted into writes; r reads, the benchmark's shared cache.
	c       client.Client
	r       client.Reader
	writes  *writeCounter
	sources bool
}

func (z *zone) newFloor(b testing.TB, ns string, pvcs int, reads client.Reader) *floorGroup {
	g := z.newGroup(b, ns, pvcs, map[string]string{drv1alpha1.EnableDiffAnnotation: "true"})
	// The floor's client plays the RGS: delete the group's before its first
	// cycle, so that it writes nothing.
	src := g.source()
	if err := z.primary.Delete(context.Background(), src); err != nil {
		b.Fatal(err)
	}
	poll(b, "the floor group's RGS gone", func() bool {
		return z.primary.Get(context.Background(), client.ObjectKeyFromObject(src), &drv1alpha1.ReplicationGroupSource{}) != nil
	})
	status := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "floor-status"}}
	if err := z.primary.Create(context.Background(), status); err != nil {
		b.Fatal(err)
	}
	writes := &writeCounter{}
	c, err := client.New(writes.wrap(z.configs[harness.Primary]), client.Options{Scheme: scheme.New()})
	must(b, err)
	return &floorGroup{g: g, c: c, r: reads, writes: writes}
}

// cycle makes the writes of one diff-mode cycle with a plain client: the group
// snapshot; once ready, one restored PVC per member; once bound, each source
// triggered with the previous cycle's member as base; once every source
// synced, the restored PVCs and the previous snapshot deleted, the new one
// labelled previous, and one status write.
func (f *floorGroup) cycle(b testing.TB, name string) {
	b.Helper()
	ctx := context.Background()
	c, r, ns := f.c, f.r, f.g.ns
	vgs := &groupsnapshotv1.VolumeGroupSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{drv1alpha1.VGSStatusLabel: drv1alpha1.VGSStatusCurrent}},
		Spec: groupsnapshotv1.VolumeGroupSnapshotSpec{
			Source:                       groupsnapshotv1.VolumeGroupSnapshotSource{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{groupLabel: f.g.name}}},
			VolumeGroupSnapshotClassName: ptr.To(groupClass),
		},
	}
	must(b, c.Create(ctx, vgs))
	poll(b, "floor snapshot "+name, func() bool {
		return r.Get(ctx, client.ObjectKeyFromObject(vgs), vgs) == nil && vgs.Status != nil && ptr.Deref(vgs.Status.ReadyToUse, false)
	})
	for _, p := range f.g.pvcs {
		must(b, c.Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: volsync.RestoredPVCName(p), Namespace: ns, Labels: map[string]string{"floor": "restored"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To(storageClass), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
				Resources:  corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				DataSource: &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: name + "-" + p},
			}}))
	}
	poll(b, "floor restored PVCs bound", func() bool {
		list := &corev1.PersistentVolumeClaimList{}
		if r.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"floor": "restored"}) != nil {
			return false
		}
		bound := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.ClaimBound {
				bound++
			}
		}
		return bound == len(f.g.pvcs)
	})
	addresses := map[string]string{}
	for _, d := range f.g.source().Spec.Destinations {
		addresses[d.PVCName] = d.Address
	}
	for _, p := range f.g.pvcs {
		base := ""
		if f.previous != "" {
			base = f.previous + "-" + p
		}
		// One merge patch of what changes, as a controller sends it; the
		// first cycle creates the sources.
		rs := &volsyncv1alpha1.ReplicationSource{TypeMeta: metav1.TypeMeta{APIVersion: volsyncv1alpha1.GroupVersion.String(), Kind: "ReplicationSource"},
			ObjectMeta: metav1.ObjectMeta{Name: p, Namespace: ns}}
		rs.Labels = map[string]string{"floor": "source"}
		rs.Spec.SourcePVC = volsync.RestoredPVCName(p)
		rs.Spec.Trigger = &volsyncv1alpha1.ReplicationSourceTriggerSpec{Manual: name}
		rs.Spec.External = &volsyncv1alpha1.ReplicationSourceExternalSpec{Provider: provisioner, Parameters: map[string]string{
			"copyMethod": string(volsyncv1alpha1.CopyMethodDirect), "volumeName": volsync.RestoredPVCName(p),
			"baseSnapshotName": base, "targetSnapshotName": name + "-" + p,
			"address": addresses[p], "keySecret": volsync.PSKSecretName(f.g.name)}}
		if f.sources {
			must(b, c.Patch(ctx, rs, client.Merge))
		} else {
			must(b, c.Create(ctx, rs))
		}
	}
	f.sources = true
	poll(b, "floor sources synced", func() bool {
		list := &volsyncv1alpha1.ReplicationSourceList{}
		if r.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"floor": "source"}) != nil {
			return false
		}
		done := 0
		for _, rs := range list.Items {
			if rs.Status != nil && rs.Status.LastManualSync == name {
				done++
			}
		}
		return done == len(f.g.pvcs)
	})
	must(b, c.DeleteAllOf(ctx, &corev1.PersistentVolumeClaim{}, client.InNamespace(ns), client.MatchingLabels{"floor": "restored"}))
	if f.previous != "" {
		must(b, c.Delete(ctx, &groupsnapshotv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: f.previous}}))
	}
	before := vgs.DeepCopy()
	vgs.Labels[drv1alpha1.VGSStatusLabel] = drv1alpha1.VGSStatusPrevious
	must(b, c.Patch(ctx, vgs, client.MergeFrom(before)))
	status := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "floor-status"}, Data: map[string]string{"lastSync": name}}
	must(b, c.Patch(ctx, status, client.Merge))
	f.previous = name
}

// settle waits until the last cycle's restored PVCs are gone: the next
// cycle creates them again under the same names.
func (f *floorGroup) settle(b testing.TB) {
	poll(b, "floor restored PVCs deleted", func() bool {
		list := &corev1.PersistentVolumeClaimList{}
		return f.r.List(context.Background(), list, client.InNamespace(f.g.ns), client.MatchingLabels{"floor": "restored"}) == nil && len(list.Items) == 0
	})
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
