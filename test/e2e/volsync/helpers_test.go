package volsync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
	"github.com/siterecovery/siterecovery/internal/workload/volsync/rgd"
	"github.com/siterecovery/siterecovery/internal/workload/volsync/rgs"
	"github.com/siterecovery/siterecovery/internal/workload/vrg"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/sim/blockstore"
	"github.com/siterecovery/siterecovery/test/sim/mover"
	snapshotsim "github.com/siterecovery/siterecovery/test/sim/snapshot"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

const (
	storageClass = "cephfs"
	// provisioner is the CSI driver of the classes and of the storage
	// simulator's volumes: the snapshot-controller takes a group snapshot only
	// of volumes of its class's driver.
	provisioner = storagesim.Driver
	groupClass  = "cephfs-vgsc"
	blockSize   = 4096
	blocks      = 1000
	wait        = 3 * time.Minute
	groupLabel  = "app.example.com/cg"
)

// zone is a primary and a secondary cluster, each with the simulators and the
// VolSync group controllers, sharing one store of volume data.
type zone struct {
	primary, secondary client.Client
	data               *blockstore.Store
	mover              *mover.Mover
	configs            map[string]*rest.Config
	stops              map[string]func()
	simStops           map[string]func()
	// writes counts the writes of the controllers under test, per cluster.
	writes map[string]*writeCounter
	// serviceExport runs the destinations' controller with ServiceExports on.
	serviceExport bool
	// t is the test that owns the zone: a manager restarted inside a subtest
	// must outlive that subtest, so that later subtests find it running.
	t testing.TB
}

// startZone is a zone whose volumes have blocks blocks of blockSize bytes.
func startZone(t *testing.T) *zone { return startZoneWith(t, blockSize, blocks) }

func startZoneWith(t testing.TB, blockSize int64, blocks int) *zone {
	t.Helper()
	return startZoneOf(t, zoneOptions{blockSize: blockSize, blocks: blocks})
}

// zoneOptions configure startZoneOf.
type zoneOptions struct {
	blockSize int64
	blocks    int
	// crds replaces the default CRD paths.
	crds []string
	// serviceExport turns ServiceExports on in the destinations' controller.
	serviceExport bool
}

func startZoneOf(t testing.TB, o zoneOptions) *zone {
	t.Helper()
	log.SetLogger(zap.New(zap.WriteTo(t.Output()), zap.UseDevMode(false)))
	s := scheme.New()
	crds := o.crds
	if crds == nil {
		crds = harness.DefaultCRDPaths()
	}
	hz := harness.Start(t, harness.Options{CRDDirectoryPaths: crds, Scheme: s}, harness.Primary, harness.DR)
	z := &zone{data: blockstore.New(o.blockSize, o.blocks), configs: map[string]*rest.Config{}, stops: map[string]func(){}, simStops: map[string]func(){}, t: t,
		writes: map[string]*writeCounter{harness.Primary: {}, harness.DR: {}}, serviceExport: o.serviceExport}
	z.mover = mover.New(z.data)
	for _, name := range []string{harness.Primary, harness.DR} {
		cfg := hz.Clusters[name].Config
		z.configs[name] = cfg
		// The snapshot-controller runs for the whole test; startSims may
		// stop and start the driver's part beside it.
		require.NoError(t, hz.Clusters[name].StartSnapshotController(t.Context()))
		z.startSims(t, name)
		z.startControllers(t, name)
		c := hz.Clusters[name].Client
		require.NoError(t, c.Create(t.Context(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: storageClass}, Provisioner: provisioner}))
		require.NoError(t, c.Create(t.Context(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: storageClass + "-other"}, Provisioner: provisioner}))
		require.NoError(t, c.Create(t.Context(), &groupsnapshotv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: groupClass},
			Driver: provisioner, DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete}))
		// The default class of the driver: the mover snapshots its
		// destinations without naming one, as VolSync does, and the
		// snapshot-controller then takes the driver's default.
		require.NoError(t, c.Create(t.Context(), &snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: groupClass,
			Annotations: map[string]string{"snapshot.storage.kubernetes.io/is-default-class": "true"}},
			Driver: provisioner, DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete}))
	}
	z.primary, z.secondary = hz.Clusters[harness.Primary].Client, hz.Clusters[harness.DR].Client
	return z
}

func newManager(t testing.TB, cfg *rest.Config) ctrl.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	require.NoError(t, err)
	return mgr
}

// run starts mgr until the test ends and returns a function that stops it
// early, as a killed process would stop.
func run(t testing.TB, mgr ctrl.Manager) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	return stop
}

// startSims runs the snapshot (the CSI driver's part), storage and mover
// simulators of a cluster until the zone's test ends; simStops stops them
// early, which holds every step that waits for them.
func (z *zone) startSims(t testing.TB, cluster string) {
	sims := newManager(t, z.configs[cluster])
	require.NoError(t, snapshotsim.SetupWithManager(sims, snapshotsim.Options{Data: z.data, Driver: provisioner}))
	require.NoError(t, storagesim.SetupWithManager(sims, storagesim.Options{SkipRestores: true}))
	require.NoError(t, z.mover.SetupWithManager(sims, cluster))
	z.simStops[cluster] = run(z.t, sims)
}

// startControllers runs the workload tier's VolSync controllers on a cluster,
// the part of pg-controller under test, until the zone's test ends.
func (z *zone) startControllers(t testing.TB, cluster string) {
	mgr := newManager(t, z.writes[cluster].wrap(z.configs[cluster]))
	require.NoError(t, rgs.SetupWithManager(mgr))
	require.NoError(t, rgd.SetupWithManager(mgr, rgd.Options{ServiceExport: z.serviceExport}))
	require.NoError(t, vrg.SetupWithManager(mgr, vrg.Options{}))
	z.stops[cluster] = run(z.t, mgr)
}

// group is one consistency group protected from the primary to the secondary.
type group struct {
	z    *zone
	t    testing.TB
	ns   string
	name string
	pvcs []string
}

// newGroup creates n bound PVCs with data on the primary, and the group's RGD
// and RGS (trigger manual, not yet fired).
func (z *zone) newGroup(t testing.TB, ns string, n int, annotations map[string]string) *group {
	t.Helper()
	g := z.newGroupOf(t, ns, n, annotations, nil)
	g.relay()
	return g
}

// newGroupOf is newGroup with PVCs of volumeMode mode (nil: the default), and
// without relaying the destinations' addresses to the RGS.
func (z *zone) newGroupOf(t testing.TB, ns string, n int, annotations map[string]string, mode *corev1.PersistentVolumeMode) *group {
	t.Helper()
	g := &group{z: z, t: t, ns: ns, name: ns + "-cg"}
	ctx := t.Context()
	for _, c := range []client.Client{z.primary, z.secondary} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	specs := make([]drv1alpha1.VolSyncReplicationDestinationSpec, 0, n)
	for i := range n {
		name := fmt.Sprintf("disk-%d", i)
		g.pvcs = append(g.pvcs, name)
		pvc := newPVC(ns, name, storageClass)
		pvc.Labels = map[string]string{groupLabel: g.name}
		pvc.Spec.VolumeMode = mode
		require.NoError(t, z.primary.Create(ctx, pvc))
		specs = append(specs, drv1alpha1.VolSyncReplicationDestinationSpec{ProtectedPVC: drv1alpha1.VolSyncProtectedPVC{
			Name: name, Namespace: ns, StorageClassName: ptr.To(storageClass), AccessModes: pvc.Spec.AccessModes, Resources: pvc.Spec.Resources,
			VolumeMode: mode,
		}})
	}
	for i, name := range g.pvcs {
		z.data.Fill(g.volume(name), uint64(i+1))
	}
	z.shareKey(t, ns, volsync.PSKSecretName(g.name))
	require.NoError(t, z.secondary.Create(ctx, &drv1alpha1.ReplicationGroupDestination{
		ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: ns, Annotations: annotations},
		Spec:       drv1alpha1.ReplicationGroupDestinationSpec{RDSpecs: specs},
	}))
	require.NoError(t, z.primary.Create(ctx, &drv1alpha1.ReplicationGroupSource{
		ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: ns, Annotations: annotations},
		Spec: drv1alpha1.ReplicationGroupSourceSpec{
			Trigger:                      &drv1alpha1.ReplicationSourceTriggerSpec{},
			VolumeGroupSnapshotClassName: groupClass,
			VolumeGroupSnapshotSource:    &metav1.LabelSelector{MatchLabels: map[string]string{groupLabel: g.name}},
		},
	}))
	return g
}

// relay copies the addresses the RGD recorded for its destinations into the
// RGS's spec.destinations, as the quorum tier relays them from the secondary
// VRG to the primary one, once every PVC has one.
func (g *group) relay() {
	g.t.Helper()
	var dsts []drv1alpha1.VolSyncDestination
	eventually(g.t, "the destinations' addresses", func() error {
		d := &drv1alpha1.ReplicationGroupDestination{}
		if err := g.z.secondary.Get(context.Background(), client.ObjectKey{Namespace: g.ns, Name: g.name}, d); err != nil {
			return err
		}
		if len(d.Status.Destinations) != len(g.pvcs) {
			return fmt.Errorf("destinations %+v", d.Status.Destinations)
		}
		dsts = d.Status.Destinations
		return nil
	})
	g.patchSource(func(s *drv1alpha1.ReplicationGroupSource) { s.Spec.Destinations = dsts })
}

// address is where the RGS sends a PVC.
func (g *group) address(pvc string) string {
	for _, d := range g.source().Spec.Destinations {
		if d.PVCName == pvc {
			return d.Address
		}
	}
	g.t.Fatalf("no destination address for %s", pvc)
	return ""
}

// shareKey creates one pre-shared-key Secret on both clusters, as the quorum
// tier copies it there: the movers connect only with equal keys.
func (z *zone) shareKey(t testing.TB, ns, name string) {
	t.Helper()
	for _, c := range []client.Client{z.primary, z.secondary} {
		require.NoError(t, c.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string][]byte{mover.PSKKey: []byte("volsync:" + ns + "-test-key")}}))
	}
}

func newPVC(ns, name, sc string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(sc),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// volume is the data handle of a primary PVC (its PV name), once bound.
func (g *group) volume(pvc string) string { return g.boundVolume(g.z.primary, "PVC "+pvc, pvc) }

// received is the data handle of the secondary's PVC, once bound.
func (g *group) received(pvc string) string {
	return g.boundVolume(g.z.secondary, "received PVC "+pvc, pvc)
}

// boundVolume waits until a PVC of the group's namespace on c is bound and
// returns its PV name.
func (g *group) boundVolume(c client.Client, what, pvc string) string {
	g.t.Helper()
	var name string
	eventually(g.t, what+" bound", func() error {
		p := &corev1.PersistentVolumeClaim{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: g.ns, Name: pvc}, p); err != nil {
			return err
		}
		if p.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("phase %q", p.Status.Phase)
		}
		name = p.Spec.VolumeName
		return nil
	})
	return name
}

// primarySums are the checksums of the primary's PVCs.
func (g *group) primarySums() map[string]string {
	out := map[string]string{}
	for _, p := range g.pvcs {
		out[p] = g.z.data.Checksum(g.volume(p))
	}
	return out
}

// imageSums are the checksums of the images the RGD recorded.
func (g *group) imageSums() (map[string]string, error) {
	ctx := context.Background()
	d := &drv1alpha1.ReplicationGroupDestination{}
	if err := g.z.secondary.Get(ctx, client.ObjectKey{Namespace: g.ns, Name: g.name}, d); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, li := range d.Status.LatestImages {
		handle, err := snapshotHandle(ctx, g.z.secondary, g.ns, li.Snapshot.Name)
		if err != nil {
			return nil, err
		}
		out[li.PVCName] = g.z.data.Checksum(handle)
	}
	return out, nil
}

func snapshotHandle(ctx context.Context, c client.Client, ns, name string) (string, error) {
	vs := &snapshotv1.VolumeSnapshot{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, vs); err != nil {
		return "", err
	}
	if vs.Status == nil || vs.Status.BoundVolumeSnapshotContentName == nil {
		return "", fmt.Errorf("snapshot %s not bound", name)
	}
	content := &snapshotv1.VolumeSnapshotContent{}
	if err := c.Get(ctx, client.ObjectKey{Name: *vs.Status.BoundVolumeSnapshotContentName}, content); err != nil {
		return "", err
	}
	return ptr.Deref(content.Status.SnapshotHandle, ""), nil
}

// cycle fires the manual trigger and waits until the RGS reports it synced
// and the RGD recorded images equal to want.
func (g *group) cycle(manual string, want map[string]string) *drv1alpha1.ReplicationGroupSource {
	g.t.Helper()
	g.trigger(manual)
	src := g.waitSynced(manual)
	eventually(g.t, "images of cycle "+manual, func() error {
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
	})
	return src
}

func (g *group) trigger(manual string) {
	g.t.Helper()
	g.patchSource(func(s *drv1alpha1.ReplicationGroupSource) {
		s.Spec.Trigger = &drv1alpha1.ReplicationSourceTriggerSpec{Manual: manual}
	})
}

func (g *group) patchSource(mutate func(*drv1alpha1.ReplicationGroupSource)) {
	g.t.Helper()
	eventually(g.t, "patch RGS", func() error {
		s := g.source()
		before := s.DeepCopy()
		mutate(s)
		return g.z.primary.Patch(context.Background(), s, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
}

func (g *group) setDiff(value string) {
	g.t.Helper()
	set := func(o client.Object) {
		a := o.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		if value == "" {
			delete(a, drv1alpha1.EnableDiffAnnotation)
		} else {
			a[drv1alpha1.EnableDiffAnnotation] = value
		}
		o.SetAnnotations(a)
	}
	g.patchSource(func(s *drv1alpha1.ReplicationGroupSource) { set(s) })
	eventually(g.t, "patch RGD", func() error {
		d := &drv1alpha1.ReplicationGroupDestination{}
		if err := g.z.secondary.Get(context.Background(), client.ObjectKey{Namespace: g.ns, Name: g.name}, d); err != nil {
			return err
		}
		before := d.DeepCopy()
		set(d)
		return g.z.secondary.Patch(context.Background(), d, client.MergeFrom(before))
	})
}

func (g *group) source() *drv1alpha1.ReplicationGroupSource {
	g.t.Helper()
	s := &drv1alpha1.ReplicationGroupSource{}
	require.NoError(g.t, g.z.primary.Get(context.Background(), client.ObjectKey{Namespace: g.ns, Name: g.name}, s))
	return s
}

func (g *group) waitSynced(manual string) *drv1alpha1.ReplicationGroupSource {
	g.t.Helper()
	var s *drv1alpha1.ReplicationGroupSource
	eventually(g.t, "cycle "+manual+" synced", func() error {
		s = g.source()
		if s.Status.LastManualSync != manual || s.Status.CurrentVolumeGroupSnapshot != "" {
			c := meta.FindStatusCondition(s.Status.Conditions, srv1alpha1.ConditionReady)
			return fmt.Errorf("lastManualSync %q, current %q, ready %+v", s.Status.LastManualSync, s.Status.CurrentVolumeGroupSnapshot, c)
		}
		return nil
	})
	return s
}

// waitReady waits until the RGS's Ready condition has reason and a message
// containing each of parts.
func (g *group) waitReady(reason string, parts ...string) {
	g.t.Helper()
	var c *metav1.Condition
	eventually(g.t, "Ready reason "+reason, func() error {
		s := g.source()
		c = meta.FindStatusCondition(s.Status.Conditions, srv1alpha1.ConditionReady)
		if c == nil || c.Reason != reason {
			return fmt.Errorf("ready %+v", c)
		}
		// A condition from before the last spec change (a trigger) does not
		// answer it: the controller has not looked at that change yet.
		if c.ObservedGeneration != s.Generation {
			return fmt.Errorf("ready is of generation %d, the spec is at %d", c.ObservedGeneration, s.Generation)
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				return fmt.Errorf("message %q lacks %q", c.Message, p)
			}
		}
		return nil
	})
}

// lastBytes is the byte count of each PVC's last completed sync.
func (g *group) lastBytes() map[string]int64 {
	out := map[string]int64{}
	for _, p := range g.pvcs {
		tr := g.z.mover.Transfers(g.ns, p)
		require.NotEmpty(g.t, tr, p)
		out[p] = tr[len(tr)-1].Bytes
	}
	return out
}

// change rewrites a share of every PVC's blocks and returns the count per PVC.
func (g *group) change(share float64, seed uint64) map[string]int {
	out := map[string]int{}
	for i, p := range g.pvcs {
		out[p] = g.z.data.Change(g.volume(p), share, seed*100+uint64(i))
	}
	return out
}

// counts are the group's objects on the primary at rest: VolumeGroupSnapshots by
// vgs-status, restored PVCs and VolumeSnapshots.
func (g *group) counts() (current, previous, restored, snapshots int) {
	g.t.Helper()
	ctx := context.Background()
	vgs := &groupsnapshotv1.VolumeGroupSnapshotList{}
	require.NoError(g.t, g.z.primary.List(ctx, vgs, client.InNamespace(g.ns)))
	for _, v := range vgs.Items {
		switch v.Labels[drv1alpha1.VGSStatusLabel] {
		case drv1alpha1.VGSStatusCurrent:
			current++
		case drv1alpha1.VGSStatusPrevious:
			previous++
		}
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	require.NoError(g.t, g.z.primary.List(ctx, pvcs, client.InNamespace(g.ns), client.MatchingLabels{volsync.RGSLabel: g.name}))
	vs := &snapshotv1.VolumeSnapshotList{}
	require.NoError(g.t, g.z.primary.List(ctx, vs, client.InNamespace(g.ns)))
	return current, previous, len(pvcs.Items), len(vs.Items)
}

func (g *group) sources() []volsyncv1alpha1.ReplicationSource {
	list := &volsyncv1alpha1.ReplicationSourceList{}
	require.NoError(g.t, g.z.primary.List(context.Background(), list, client.InNamespace(g.ns)))
	return list.Items
}

func eventually(t testing.TB, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(wait)
	var last error
	for time.Now().Before(deadline) {
		if last = cond(); last == nil {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s: %v", what, last)
}

// rolledBack waits until the former secondary's VRG is primary and ready,
// then requires each PVC to equal the last complete image (last, by PVC),
// rolled back exactly once: in diff mode with only what differs, in
// standard mode with the whole image.
func (g *group) rolledBack(t *testing.T, ns string, last map[string]string, diff bool) {
	t.Helper()
	z := g.z
	waitVRG(t, z.secondary, ns, func(v *drv1alpha1.VolumeReplicationGroup) error {
		if v.Status.State != drv1alpha1.PrimaryState || !meta.IsStatusConditionTrue(v.Status.Conditions, drv1alpha1.ConditionDataReady) {
			return fmt.Errorf("state %s, conditions %+v", v.Status.State, v.Status.Conditions)
		}
		return nil
	})
	for _, p := range g.pvcs {
		require.Equal(t, last[p], z.data.Checksum(g.received(p)), "PVC %s is back at the last complete image", p)
		tr := z.mover.Transfers(ns, "rb-"+p)
		require.Len(t, tr, 1, "PVC %s rolled back once", p)
		if diff {
			require.False(t, tr[0].Full, "diff mode sends only what differs")
			require.Positive(t, tr[0].Bytes)
			require.Less(t, tr[0].Bytes, z.data.Size())
		} else {
			require.True(t, tr[0].Full, "standard mode copies the whole image")
			require.Equal(t, z.data.Size(), tr[0].Bytes)
		}
	}
	// The old primary has no destination, as after a disaster: the new
	// primary's cycles have no address to send to. Its PVCs stay ready;
	// DataProtected names what they wait for.
	waitVRG(t, z.secondary, ns, func(v *drv1alpha1.VolumeReplicationGroup) error {
		protected := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionDataProtected)
		if !meta.IsStatusConditionTrue(v.Status.Conditions, drv1alpha1.ConditionDataReady) || protected == nil ||
			protected.Status != metav1.ConditionFalse || !strings.Contains(protected.Message, "no address yet for ReplicationDestination") {
			return fmt.Errorf("conditions %+v", v.Status.Conditions)
		}
		return nil
	})
}
