package volsync_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
	"github.com/siterecovery/siterecovery/internal/workload/volsync/rgs"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/sim/guest"
	snapshotsim "github.com/siterecovery/siterecovery/test/sim/snapshot"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
	"github.com/siterecovery/siterecovery/test/sim/virtapi"
)

const (
	// freezeDRNamespace holds the local ProtectionGroups of the groups.
	freezeDRNamespace = "dr-freeze"
	// unservedClass is a group snapshot class of a driver other than the
	// volumes': the snapshot-controller refuses its snapshots.
	unservedClass = "unserved-vgsc"
	// guestDisk holds 1024 blocks: 128 records of recordBlocks, more than
	// the test writes, so no write wraps around (guest.CheckImage).
	guestDisk    = 4 << 20
	recordBlocks = 8
)

// TestApplicationConsistentCycles runs the source half of VolSync groups
// that ask for Application consistency on one API server with the virt-api
// simulator and simulated guests: each scenario its own group.
func TestApplicationConsistentCycles(t *testing.T) {
	f := newFreezeFixture(t)
	t.Run("application point holds no torn record", f.testApplicationPoint)
	t.Run("silent agent makes a crash point naming the VM", f.testSilentAgent)
	t.Run("failed cut thaws the guests", f.testFailedCut)
}

// freezeFixture is one cluster with the snapshot and storage simulators
// (volumes' bytes in files), virt-api, the guests and the source controller.
type freezeFixture struct {
	t      *testing.T
	c      client.Client
	dir    string
	guests *guest.Guests
	gc     *guest.Cluster
	api    *virtapi.Server
}

func newFreezeFixture(t *testing.T) *freezeFixture {
	log.SetLogger(zap.New(zap.WriteTo(t.Output()), zap.UseDevMode(false)))
	hz := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, harness.Primary)
	hc := hz.Clusters[harness.Primary]
	ctx := t.Context()
	require.NoError(t, hc.StartSnapshotController(ctx))
	f := &freezeFixture{t: t, c: hc.Client, dir: storagesim.TempDeviceDir(t), guests: guest.New()}
	f.gc = guest.NewCluster(harness.Primary, hc.Client, nil, f.dir)
	sims := newManager(t, hc.Config)
	require.NoError(t, snapshotsim.SetupWithManager(sims, snapshotsim.Options{Driver: provisioner, DeviceDir: f.dir}))
	require.NoError(t, storagesim.SetupWithManager(sims, storagesim.Options{DeviceDir: f.dir, SkipRestores: true}))
	run(t, sims)
	mgr := newManager(t, hc.Config)
	require.NoError(t, rgs.SetupWithManager(mgr))
	run(t, mgr)
	f.api = virtapi.Start(t, hc, f.guests)
	require.NoError(t, f.c.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: storageClass}, Provisioner: provisioner}))
	for name, driver := range map[string]string{groupClass: provisioner, unservedClass: "unserved.example.com"} {
		require.NoError(t, f.c.Create(ctx, &groupsnapshotv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Driver: driver, DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete}))
	}
	require.NoError(t, f.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: freezeDRNamespace}}))
	return f
}

// newGroup makes namespace ns hold running VMs vms, each with one block
// disk "root" whose bytes are a file, a VRG naming the local group ns (in
// freezeDRNamespace) that asks for Application points bounded by bound, and
// that VRG's source of the VMs' disks, whose first cycle waits for start.
func (f *freezeFixture) newGroup(ns string, bound int32, vms ...string) {
	t, ctx := f.t, f.t.Context()
	require.NoError(t, f.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	refs := make([]srv1alpha1.VirtualMachineReference, 0, len(vms))
	for _, vm := range vms {
		f.runningVM(types.NamespacedName{Namespace: ns, Name: vm})
		refs = append(refs, srv1alpha1.VirtualMachineReference{Namespace: ns, Name: vm})
	}
	require.NoError(t, f.c.Create(ctx, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: freezeDRNamespace, Name: ns},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs,
			Consistency: &srv1alpha1.ConsistencySpec{Mode: srv1alpha1.ConsistencyApplication, FreezeTimeoutSeconds: bound}}}))
	require.NoError(t, f.c.Create(ctx, &drv1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Labels: map[string]string{srv1alpha1.DRNamespaceLabel: freezeDRNamespace}},
		Spec: drv1alpha1.VolumeReplicationGroupSpec{PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{groupLabel: ns}},
			ReplicationState: drv1alpha1.Primary, ProtectionGroupRef: ns}}))
}

// startCycle creates the group's source with a manual trigger: its first
// cycle starts at once.
func (f *freezeFixture) startCycle(ns, class string) {
	require.NoError(f.t, f.c.Create(f.t.Context(), &drv1alpha1.ReplicationGroupSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-cg", Labels: map[string]string{volsync.VRGLabel: "app"}},
		Spec: drv1alpha1.ReplicationGroupSourceSpec{Trigger: &drv1alpha1.ReplicationSourceTriggerSpec{Manual: "first"},
			VolumeGroupSnapshotClassName: class,
			VolumeGroupSnapshotSource:    &metav1.LabelSelector{MatchLabels: map[string]string{groupLabel: ns}}},
	}))
}

func (f *freezeFixture) runningVM(vm types.NamespacedName) {
	t, ctx := f.t, f.t.Context()
	claim := newPVC(vm.Namespace, vm.Name+"-root", storageClass)
	claim.Labels = map[string]string{groupLabel: vm.Namespace}
	claim.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
	claim.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	claim.Spec.Resources.Requests[corev1.ResourceStorage] = *resource.NewQuantity(guestDisk, resource.BinarySI)
	require.NoError(t, f.c.Create(ctx, claim))
	eventually(t, "claim of "+vm.String()+" bound", func() error {
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return err
		}
		if claim.Status.Phase != corev1.ClaimBound {
			return errors.New("pending")
		}
		return nil
	})
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: vm.Name}, Spec: kubevirtv1.VirtualMachineInstanceSpec{
		Volumes: []kubevirtv1.Volume{{Name: "root", VolumeSource: kubevirtv1.VolumeSource{
			PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}}},
	}}
	require.NoError(t, f.c.Create(ctx, vmi))
	vmi.Status.Phase = kubevirtv1.Running
	require.NoError(t, f.c.Update(ctx, vmi)) // the VMI CRD has no status subresource
}

// point waits for the group's recorded point.
func (f *freezeFixture) point(ns string) *srv1alpha1.ConsistencyPoint {
	var p *srv1alpha1.ConsistencyPoint
	eventually(f.t, "the point of "+ns, func() error {
		g := &srv1alpha1.ProtectionGroup{}
		if err := f.c.Get(f.t.Context(), client.ObjectKey{Namespace: freezeDRNamespace, Name: ns}, g); err != nil {
			return err
		}
		if g.Status.Consistency == nil || g.Status.Consistency.LastPoint == nil {
			return errors.New("no point recorded")
		}
		p = g.Status.Consistency.LastPoint
		return nil
	})
	return p
}

// cycleSnapshot is the group snapshot of the source's cycle, once cut.
func (f *freezeFixture) cycleSnapshot(ns string) *groupsnapshotv1.VolumeGroupSnapshot {
	ctx := f.t.Context()
	src := &drv1alpha1.ReplicationGroupSource{}
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-cg"}, src); err != nil || src.Status.CurrentVolumeGroupSnapshot == "" {
		return nil
	}
	vgs := &groupsnapshotv1.VolumeGroupSnapshot{}
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: src.Status.CurrentVolumeGroupSnapshot}, vgs); err != nil {
		return nil
	}
	if vgs.Status == nil || vgs.Status.CreationTime == nil {
		return nil
	}
	return vgs
}

// image is what the cycle's group snapshot holds of vm's disk.
func (f *freezeFixture) image(vm types.NamespacedName) []byte {
	t, ctx := f.t, f.t.Context()
	// The group snapshot's status, which the snapshot controller sets, can
	// reach this client after the point the test waited for (CI saw it once).
	var vgs *groupsnapshotv1.VolumeGroupSnapshot
	require.Eventually(t, func() bool {
		vgs = f.cycleSnapshot(vm.Namespace)
		return vgs != nil
	}, time.Minute, 100*time.Millisecond, "the cycle's snapshot is cut")
	content := &groupsnapshotv1.VolumeGroupSnapshotContent{}
	require.NoError(t, f.c.Get(ctx, client.ObjectKey{Name: ptr.Deref(vgs.Status.BoundVolumeGroupSnapshotContentName, "")}, content))
	claim := &corev1.PersistentVolumeClaim{}
	require.NoError(t, f.c.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: vm.Name + "-root"}, claim))
	for _, info := range content.Status.VolumeSnapshotInfoList {
		if info.VolumeHandle == claim.Spec.VolumeName {
			b, err := os.ReadFile(snapshotsim.ImageFile(f.dir, info.SnapshotHandle))
			require.NoError(t, err)
			return b
		}
	}
	t.Fatalf("group snapshot %s holds no snapshot of %s", vgs.Name, claim.Spec.VolumeName)
	return nil
}

func (f *freezeFixture) fsFreezeStatus(vm types.NamespacedName) string {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	require.NoError(f.t, f.c.Get(f.t.Context(), vm, vmi))
	return vmi.Status.FSFreezeStatus
}

// testApplicationPoint: the guest is halfway through a record when the
// cycle starts. The guest agent lets it finish the record before the
// freeze, so the cycle's snapshot holds whole records only; without the
// freeze the snapshot would hold the half record (the writer is held there
// until the freeze call or the cut, whichever comes first).
func (f *freezeFixture) testApplicationPoint(t *testing.T) {
	f.t = t
	db := types.NamespacedName{Namespace: "consistent", Name: "db"}
	f.newGroup(db.Namespace, 30, db.Name)
	ctx := t.Context()
	midRecord, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.guests.OnBlock(func(vm types.NamespacedName, n int) {
		if vm == db && n == 3 {
			once.Do(func() { close(midRecord); <-release })
		}
	})
	defer f.guests.OnBlock(nil)
	done := make(chan error, 1)
	go func() {
		for range 20 {
			if _, err := f.guests.Write(ctx, f.gc, db, recordBlocks); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	<-midRecord
	freezes := f.api.Calls("freeze")
	f.startCycle(db.Namespace, groupClass)
	eventually(t, "the freeze call or the cut", func() error {
		if f.api.Calls("freeze") > freezes || f.cycleSnapshot(db.Namespace) != nil {
			return nil
		}
		return errors.New("neither yet")
	})
	close(release)

	p := f.point(db.Namespace)
	require.Equal(t, srv1alpha1.ConsistencyApplication, p.Consistency, "%s", p.Message)
	require.Equal(t, rgs.PointSource, p.Source)
	require.Empty(t, p.CrashConsistentVMs)
	check := f.guests.CheckImage(db, "root", f.image(db))
	require.Zero(t, check.TornRecords, "the cycle's snapshot holds a half-written record: %+v", check)
	require.Positive(t, check.Records)
	require.NoError(t, <-done, "the guest wrote every record: it was thawed")
	require.False(t, f.guests.Frozen(db))
	require.Empty(t, f.fsFreezeStatus(db))
	t.Logf("point: %d whole records, frozen %d ms", check.Records, p.FrozenMilliseconds)
}

// testSilentAgent: one guest's agent does not answer; the cycle's snapshot
// is cut anyway, the point is Crash and names that VM, and the other guest
// is thawed.
func (f *freezeFixture) testSilentAgent(t *testing.T) {
	f.t = t
	app, quiet := types.NamespacedName{Namespace: "silent", Name: "app"}, types.NamespacedName{Namespace: "silent", Name: "quiet"}
	f.newGroup(app.Namespace, 30, app.Name, quiet.Name)
	f.guests.SetAgent(quiet, false)
	f.startCycle(app.Namespace, groupClass)
	p := f.point(app.Namespace)
	require.Equal(t, srv1alpha1.ConsistencyCrash, p.Consistency)
	require.Equal(t, []string{quiet.String()}, p.CrashConsistentVMs)
	require.Contains(t, p.Message, quiet.String()+" not frozen")
	require.Contains(t, p.Message, "Guest agent is not responding")
	t.Logf("point: %s", p.Message)
	// The source names its snapshot in its status after the point is
	// recorded: wait for it rather than read it once.
	env.Eventually(t, time.Minute, "the cycle's snapshot cut and named by the source", func() error {
		if f.cycleSnapshot(app.Namespace) == nil {
			return errors.New("not yet")
		}
		return nil
	})
	require.False(t, f.guests.Frozen(app))
	require.Empty(t, f.fsFreezeStatus(app))
}

// testFailedCut: the cycle's snapshot is refused (its class is of another
// driver); the guest is thawed, the point is Crash with the reason, and the
// guest writes on. (A cut beyond the bound takes the same path: the wait
// for creationTime ends at the bound, internal/freeze's tests.)
func (f *freezeFixture) testFailedCut(t *testing.T) {
	f.t = t
	vm := types.NamespacedName{Namespace: "uncut", Name: "db"}
	// The bound is far above the refusal's time: the cut ends at the
	// snapshot-controller's status.error, and a short bound under load could
	// end it first, with another message.
	f.newGroup(vm.Namespace, 30, vm.Name)
	thaws := f.api.Calls("unfreeze")
	f.startCycle(vm.Namespace, unservedClass)
	p := f.point(vm.Namespace)
	require.Equal(t, srv1alpha1.ConsistencyCrash, p.Consistency)
	require.Contains(t, p.Message, "was not cut while the guests were frozen")
	require.Contains(t, p.Message, "mismatch with VolumeGroupSnapshotClass")
	t.Logf("point: %s", p.Message)
	require.False(t, f.guests.Frozen(vm))
	require.Empty(t, f.fsFreezeStatus(vm))
	require.Equal(t, 1, f.api.Calls("unfreeze")-thaws, "one thaw call")
	wctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := f.guests.Write(wctx, f.gc, vm, 1)
	require.NoError(t, err, "the guest writes after the failed cut")
}
