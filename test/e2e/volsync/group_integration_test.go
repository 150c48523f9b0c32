package volsync_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/workload/volsync/rgs"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/kstatus"
	"github.com/siterecovery/siterecovery/test/sim/mover"
)

// TestConsistencyGroup runs the VolSync group flows on one primary and one
// secondary cluster; each subtest uses its own namespace, so they share them.
func TestConsistencyGroup(t *testing.T) {
	z := startZone(t)
	t.Run("FullSync", func(t *testing.T) { fullSync(t, z) })
	t.Run("DiffSync", func(t *testing.T) { diffSync(t, z) })
	t.Run("InterruptedSyncKeepsLastImage", func(t *testing.T) { interrupted(t, z) })
	t.Run("BadInput", func(t *testing.T) { badInput(t, z) })
	t.Run("CrashInEveryStep", func(t *testing.T) { crash(t, z) })
	t.Run("PublishedAddressAndBlockMode", func(t *testing.T) { publishedAddressBlock(t, z) })
	t.Run("VRG", func(t *testing.T) { vrgPath(t, z, "vrg", true) })
	t.Run("VRGStandard", func(t *testing.T) { vrgPath(t, z, "vrg-std", false) })
	t.Run("RollbackCrashInEveryStep", func(t *testing.T) { rollbackCrash(t, z, "rb-crash", true) })
	t.Run("RollbackCrashInEveryStepStandard", func(t *testing.T) { rollbackCrash(t, z, "rb-crash-std", false) })
}

// fullSync: every cycle sends every block, the secondary's images equal the
// primary's contents at the cycle's snapshot, and a cycle leaves nothing behind.
func fullSync(t *testing.T, z *zone) {
	g := z.newGroup(t, "full", 3, nil)
	// kstatus (what kubectl wait, Argo CD and Flux read): a destination that
	// has received nothing yet is in progress, both ends are Current once a
	// cycle completed.
	key := client.ObjectKey{Namespace: g.ns, Name: g.name}
	kstatus.Wait(t, z.secondary, &drv1alpha1.ReplicationGroupDestination{}, key, status.InProgressStatus, wait)
	src := g.cycle("1", g.primarySums())
	kstatus.Wait(t, z.primary, &drv1alpha1.ReplicationGroupSource{}, key, status.CurrentStatus, wait)
	kstatus.Wait(t, z.secondary, &drv1alpha1.ReplicationGroupDestination{}, key, status.CurrentStatus, wait)
	require.Len(t, src.Status.ReplicationSources, 3)
	require.NotNil(t, src.Status.LastSyncTime)
	require.NotNil(t, src.Status.LastSyncDuration)
	require.NotNil(t, src.Status.LastSyncStartTime)
	for p, b := range g.lastBytes() {
		require.Equal(t, z.data.Size(), b, "PVC %s: a full sync moves every block", p)
	}
	for _, rs := range g.sources() {
		require.NotNil(t, rs.Spec.RsyncTLS, "full-sync mode uses RsyncTLS")
		require.Nil(t, rs.Spec.External)
		require.Equal(t, g.address(rs.Name), *rs.Spec.RsyncTLS.Address)
	}
	g.change(0.01, 1)
	g.cycle("2", g.primarySums())
	for p, b := range g.lastBytes() {
		require.Equal(t, z.data.Size(), b, "PVC %s: without diff every cycle is full", p)
	}
	requireAtRest(t, g, 0)
	g.waitReady(rgs.ReasonIdle)
	c := meta.FindStatusCondition(g.source().Status.Conditions, rgs.ConditionDiffSync)
	require.Equal(t, rgs.ReasonDisabled, c.Reason)
}

// diffSync: the first cycle moves every block, later ones only the changed
// blocks; at rest exactly one previous snapshot exists and nothing leaks over
// twenty cycles; switching diff off and on keeps the data right.
func diffSync(t *testing.T, z *zone) {
	g := z.newGroup(t, "diff", 3, map[string]string{drv1alpha1.EnableDiffAnnotation: "true"})
	g.cycle("1", g.primarySums())
	for p, b := range g.lastBytes() {
		require.Equal(t, z.data.Size(), b, "PVC %s: the first cycle has no base and moves every block", p)
	}
	for _, rs := range g.sources() {
		require.Nil(t, rs.Spec.RsyncTLS, "diff mode uses the External spec")
		p := rs.Spec.External.Parameters
		require.Equal(t, provisioner, rs.Spec.External.Provider)
		require.Equal(t, "Direct", p["copyMethod"])
		require.Empty(t, p["baseSnapshotName"])
		require.NotEmpty(t, p["targetSnapshotName"])
		require.Equal(t, g.address(rs.Name), p["address"])
		require.Equal(t, "diff-cg-vs-secret", p["keySecret"])
	}
	requireAtRest(t, g, 1)

	changed := g.change(0.01, 2)
	g.cycle("2", g.primarySums())
	for p, b := range g.lastBytes() {
		require.Equal(t, int64(changed[p])*blockSize, b, "PVC %s: only the changed blocks move", p)
	}
	for _, rs := range g.sources() {
		require.NotEmpty(t, rs.Spec.External.Parameters["baseSnapshotName"])
	}
	requireAtRest(t, g, 1)

	for i := 3; i <= 22; i++ {
		changed = g.change(0.005, uint64(i))
		g.cycle(fmt.Sprint(i), g.primarySums())
		for p, b := range g.lastBytes() {
			require.Equal(t, int64(changed[p])*blockSize, b, "cycle %d PVC %s", i, p)
		}
	}
	requireAtRest(t, g, 1)

	// Off: the base goes with the next cycle, which is full.
	g.setDiff("")
	g.change(0.01, 30)
	g.cycle("off", g.primarySums())
	for p, b := range g.lastBytes() {
		require.Equal(t, z.data.Size(), b, "PVC %s", p)
	}
	requireAtRest(t, g, 0)
	// On again: a full cycle builds the base, then incremental.
	g.setDiff("true")
	g.cycle("on", g.primarySums())
	for p, b := range g.lastBytes() {
		require.Equal(t, z.data.Size(), b, "PVC %s", p)
	}
	changed = g.change(0.01, 31)
	g.cycle("on-2", g.primarySums())
	for p, b := range g.lastBytes() {
		require.Equal(t, int64(changed[p])*blockSize, b, "PVC %s", p)
	}
	requireAtRest(t, g, 1)
}

// requireAtRest checks what a group between cycles holds on the primary: no
// current snapshot, previous (0 or 1), its member snapshots and no restored PVC.
func requireAtRest(t *testing.T, g *group, previous int) {
	t.Helper()
	// Deleting is asynchronous (finalizers, the snapshot controller): what the
	// cycle deleted is gone soon after it completed.
	eventually(t, "the group at rest", func() error {
		cur, prev, restored, snapshots := g.counts()
		if cur != 0 || prev != previous || restored != 0 || snapshots != previous*len(g.pvcs) {
			return fmt.Errorf("current %d, previous %d (want %d), restored PVCs %d, snapshots %d (want %d)",
				cur, prev, previous, restored, snapshots, previous*len(g.pvcs))
		}
		return nil
	})
	st := g.source().Status
	if previous == 1 {
		require.NotEmpty(t, st.PreviousVolumeGroupSnapshot)
	} else {
		require.Empty(t, st.PreviousVolumeGroupSnapshot)
	}
}

// interrupted: a sync that stalls after writing half of one PVC's blocks
// leaves the recorded images at the last complete cycle; once it resumes the
// cycle completes.
func interrupted(t *testing.T, z *zone) {
	g := z.newGroup(t, "stall", 2, map[string]string{drv1alpha1.EnableDiffAnnotation: "true"})
	complete := g.primarySums()
	g.cycle("1", complete)
	z.mover.SetFault(g.ns, "disk-1", &mover.Fault{Stall: true})
	g.change(0.2, 5)
	next := g.primarySums()
	g.trigger("2")
	g.waitReady(srv1alpha1.ReasonSyncing, "disk-1")
	require.Equal(t, status.InProgressStatus, kstatus.Compute(t, g.source()).Status, "a cycle under way")
	got, err := g.imageSums()
	require.NoError(t, err)
	require.Equal(t, complete, got, "a partial sync never replaces the recorded images")
	z.mover.SetFault(g.ns, "disk-1", nil)
	g.waitSynced("2")
	g.cycle("2", next)
}

func badInput(t *testing.T, z *zone) {
	t.Run("AnnotationNotExactlyTrue", func(t *testing.T) {
		g := z.newGroup(t, "bad-annotation", 1, map[string]string{drv1alpha1.EnableDiffAnnotation: "True"})
		g.cycle("1", g.primarySums())
		c := meta.FindStatusCondition(g.source().Status.Conditions, rgs.ConditionDiffSync)
		require.Equal(t, rgs.ReasonInvalidAnnotation, c.Reason)
		require.Contains(t, c.Message, `"True"`)
		g.change(0.01, 1)
		g.cycle("2", g.primarySums())
		require.Equal(t, z.data.Size(), g.lastBytes()["disk-0"], "True does not enable diff")
	})
	t.Run("NoGroupSnapshotClass", func(t *testing.T) {
		g := z.newGroup(t, "no-class", 1, nil)
		g.patchSource(func(s *drv1alpha1.ReplicationGroupSource) { s.Spec.VolumeGroupSnapshotClassName = "missing" })
		g.trigger("1")
		g.waitReady(rgs.ReasonNoGroupSnapshotClass, `"missing"`)
	})
	t.Run("TwoStorageClasses", func(t *testing.T) {
		g := z.newGroup(t, "two-classes", 1, nil)
		other := newPVC(g.ns, "other", storageClass+"-other")
		other.Labels = map[string]string{groupLabel: g.name}
		require.NoError(t, z.primary.Create(t.Context(), other))
		g.trigger("1")
		g.waitReady(rgs.ReasonMixedStorageClasses, "disk-0", "other", storageClass+"-other")
		require.Equal(t, status.FailedStatus, kstatus.Compute(t, g.source()).Status, "only a spec change fixes it")
	})
	t.Run("MoverKeepsFailing", func(t *testing.T) {
		g := z.newGroup(t, "failing", 2, nil)
		z.mover.SetFault(g.ns, "disk-1", &mover.Fault{Fail: "connection reset"})
		g.trigger("1")
		g.waitReady(rgs.ReasonSourceFailing, "PVC disk-1", "connection reset")
		z.mover.SetFault(g.ns, "disk-1", nil)
		g.waitSynced("1")
	})
}

// crash: pg-controller stops in each step of a cycle (snapshot taken, PVCs
// restored, sources triggered) and starts again; every cycle completes with the
// right data, moves only the changed blocks, and leaves nothing behind.
func crash(t *testing.T, z *zone) {
	g := z.newGroup(t, "crash", 2, map[string]string{drv1alpha1.EnableDiffAnnotation: "true"})
	g.cycle("1", g.primarySums())
	steps := map[string]func() bool{
		"snapshot taken": func() bool { cur, _, _, _ := g.counts(); return cur > 0 },
		"PVCs restored":  func() bool { _, _, restored, _ := g.counts(); return restored > 0 },
		"sources triggered": func() bool {
			for _, rs := range g.sources() {
				if rs.Spec.Trigger != nil && rs.Spec.Trigger.Manual == g.source().Status.CurrentVolumeGroupSnapshot {
					return true
				}
			}
			return false
		},
	}
	i := 1
	for step, reached := range steps {
		i++
		manual := fmt.Sprint(i)
		changed := g.change(0.01, uint64(i))
		want := g.primarySums()
		g.trigger(manual)
		eventually(t, step, func() error {
			if reached() || g.source().Status.LastManualSync == manual {
				return nil
			}
			return fmt.Errorf("not yet")
		})
		z.stops[harness.Primary]()
		z.startControllers(t, harness.Primary)
		g.cycle(manual, want)
		for p, b := range g.lastBytes() {
			require.Equal(t, int64(changed[p])*blockSize, b, "after a crash at %q, PVC %s", step, p)
		}
		requireAtRest(t, g, 1)
	}
}
