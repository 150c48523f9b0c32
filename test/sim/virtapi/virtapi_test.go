package virtapi_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/freeze"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/sim/guest"
	"github.com/siterecovery/siterecovery/test/sim/virtapi"
)

const (
	ns = "apps"
	// diskSize holds 1024 blocks: 128 records of recordBlocks, more than a
	// test writes, so no write wraps around.
	diskSize     = 4 << 20
	recordBlocks = 8
	records      = 100
)

// The VMs of the scenarios: each scenario has its own, on one API server.
var (
	db      = types.NamespacedName{Namespace: ns, Name: "db"}
	torn    = types.NamespacedName{Namespace: ns, Name: "torn"}
	app     = types.NamespacedName{Namespace: ns, Name: "app"}
	web     = types.NamespacedName{Namespace: ns, Name: "web"}
	failing = types.NamespacedName{Namespace: ns, Name: "failing"}
	bounded = types.NamespacedName{Namespace: ns, Name: "bounded"}
	refused = types.NamespacedName{Namespace: ns, Name: "refused"}
)

// TestVirtAPI runs every scenario on one API server: starting one per
// scenario would cost more than the scenarios.
func TestVirtAPI(t *testing.T) {
	f := newFixture(t, db, torn, app, web, failing, bounded, refused)
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *fixture)
	}{
		{"application point holds no torn record", testApplicationPointHoldsNoTornRecord},
		{"crash point may hold a torn record", testCrashPointMayHoldATornRecord},
		{"guest without agent makes a crash point", testGuestWithoutAgentMakesACrashPoint},
		{"failed cut thaws", testAFailedCutThaws},
		{"KubeVirt thaws at the bound", testKubeVirtThawsAtTheBound},
		{"refusals", testRefusals},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.t = t
			tc.run(t, f)
		})
	}
}

// fixture is one API server with the virt-api simulator, running VMIs whose
// one disk is a file, and their guests.
type fixture struct {
	t       *testing.T
	c       *harness.Cluster
	guests  *guest.Guests
	gc      *guest.Cluster
	api     *virtapi.Server
	freezer *freeze.RESTClient
	dir     string
}

func newFixture(t *testing.T, vms ...types.NamespacedName) *fixture {
	z := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, "primary")
	c := z.Clusters["primary"]
	f := &fixture{t: t, c: c, guests: guest.New(), dir: t.TempDir()}
	f.gc = guest.NewCluster("primary", c.Client, nil, f.dir)
	ctx := t.Context()
	require.NoError(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for _, vm := range vms {
		f.runningVM(ctx, vm)
	}
	f.api = virtapi.Start(t, c, f.guests)
	var err error
	f.freezer, err = freeze.NewRESTClient(c.Config)
	require.NoError(t, err)
	return f
}

// runningVM creates a Running VMI whose disk "root" is claim <vm>-root, bound
// to a PV whose bytes are a file in f.dir.
func (f *fixture) runningVM(ctx context.Context, vm types.NamespacedName) {
	pv := "pv-" + vm.Name
	dev, err := os.Create(filepath.Join(f.dir, pv))
	require.NoError(f.t, err)
	require.NoError(f.t, dev.Truncate(diskSize))
	require.NoError(f.t, dev.Close())
	size := resource.NewQuantity(diskSize, resource.BinarySI)
	require.NoError(f.t, f.c.Client.Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pv}, Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: *size}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "file.test", VolumeHandle: pv}},
	}}))
	require.NoError(f.t, f.c.Client.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: vm.Name + "-root"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: pv,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *size}},
	}}))
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: vm.Name}, Spec: kubevirtv1.VirtualMachineInstanceSpec{
		Volumes: []kubevirtv1.Volume{{Name: "root", VolumeSource: kubevirtv1.VolumeSource{
			PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: vm.Name + "-root"}}}}},
	}}
	require.NoError(f.t, f.c.Client.Create(ctx, vmi))
	vmi.Status.Phase = kubevirtv1.Running
	require.NoError(f.t, f.c.Client.Update(ctx, vmi)) // the VMI CRD has no status subresource
}

// image is the point: the bytes of vm's disk, as a storage snapshot holds them.
func (f *fixture) image(vm types.NamespacedName) []byte {
	b, err := os.ReadFile(filepath.Join(f.dir, "pv-"+vm.Name))
	require.NoError(f.t, err)
	return b
}

// writeRecords makes vm's application write n records of recordBlocks
// blocks, one after the other; written counts the records acknowledged.
func (f *fixture) writeRecords(ctx context.Context, vm types.NamespacedName, n int, written *counter) error {
	for range n {
		if _, err := f.guests.Write(ctx, f.gc, vm, recordBlocks); err != nil {
			return err
		}
		written.add()
	}
	return nil
}

func (f *fixture) fsFreezeStatus(vm types.NamespacedName) string {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	require.NoError(f.t, f.c.Client.Get(f.t.Context(), vm, vmi))
	return vmi.Status.FSFreezeStatus
}

type counter struct {
	mu sync.Mutex
	n  int
	ch chan struct{}
}

func newCounter() *counter { return &counter{ch: make(chan struct{}, records)} }

func (c *counter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	c.ch <- struct{}{}
}

// testApplicationPointHoldsNoTornRecord cuts points while the guest writes
// records continuously: frozen through the API server and the simulator,
// each point holds whole records only, and the guest writes on after it.
func testApplicationPointHoldsNoTornRecord(t *testing.T, f *fixture) {
	ctx := t.Context()
	written := newCounter()
	done := make(chan error, 1)
	go func() { done <- f.writeRecords(ctx, db, records, written) }()

	for i := range 5 {
		<-written.ch // the guest has written since the last point
		var img []byte
		p, err := freeze.Point(ctx, f.freezer, []types.NamespacedName{db}, freeze.Options{Bound: 30 * time.Second, Source: "TestFailover"},
			func(context.Context) error {
				require.True(t, f.guests.Frozen(db))
				require.Equal(t, "frozen", f.fsFreezeStatus(db), "the VMI says the guest is frozen")
				img = f.image(db)
				return nil
			})
		require.NoError(t, err)
		require.Equal(t, srv1alpha1.ConsistencyApplication, p.Consistency, "point %d: %s", i, p.Message)
		check := f.guests.CheckImage(db, "root", img)
		require.Zero(t, check.TornRecords, "point %d holds a half-written record: %+v", i, check)
		require.Positive(t, check.Records, "point %d", i)
		t.Logf("point %d: %d whole records, %d torn, frozen %d ms", i, check.Records, check.TornRecords, p.FrozenMilliseconds)
		require.False(t, f.guests.Frozen(db), "thawed after the point")
		require.Empty(t, f.fsFreezeStatus(db))
	}
	require.NoError(t, <-done, "the guest wrote every record: no freeze was left behind")
	require.GreaterOrEqual(t, f.api.Calls("unfreeze"), 5)
}

// testCrashPointMayHoldATornRecord is the other side: a point cut without a
// freeze while a record is half written holds that half record.
func testCrashPointMayHoldATornRecord(t *testing.T, f *fixture) {
	var img []byte
	f.guests.OnBlock(func(vm types.NamespacedName, n int) {
		if vm == torn && n == 3 && img == nil {
			img = f.image(vm)
		}
	})
	defer f.guests.OnBlock(nil)
	require.NoError(t, f.writeRecords(t.Context(), torn, 4, newCounter()))
	check := f.guests.CheckImage(torn, "root", img)
	require.Equal(t, 1, check.TornRecords, "the crash point holds 3 of the first record's 8 blocks: %+v", check)
}

// testGuestWithoutAgentMakesACrashPoint: KubeVirt refuses to freeze a guest
// whose agent does not answer; the point is still cut, Crash, naming it.
func testGuestWithoutAgentMakesACrashPoint(t *testing.T, f *fixture) {
	f.guests.SetAgent(web, false)
	took := false
	p, err := freeze.Point(t.Context(), f.freezer, []types.NamespacedName{app, web}, freeze.Options{Bound: 30 * time.Second, Source: "VolSyncCycle"},
		func(context.Context) error { took = f.guests.Frozen(app); return nil })
	require.NoError(t, err)
	require.True(t, took, "the point was cut while app was frozen")
	require.Equal(t, srv1alpha1.ConsistencyCrash, p.Consistency)
	require.Equal(t, []string{"apps/web"}, p.CrashConsistentVMs)
	require.Contains(t, p.Message, "Guest agent is not responding")
	require.False(t, f.guests.Frozen(app))
	require.Empty(t, f.fsFreezeStatus(app))
}

// testAFailedCutThaws: the snapshot step fails; every guest is thawed and
// writes on.
func testAFailedCutThaws(t *testing.T, f *fixture) {
	before := f.api.Calls("unfreeze")
	boom := errors.New("snapshot refused")
	_, err := freeze.Point(t.Context(), f.freezer, []types.NamespacedName{failing}, freeze.Options{Bound: 30 * time.Second},
		func(context.Context) error { return boom })
	require.ErrorIs(t, err, boom)
	require.False(t, f.guests.Frozen(failing))
	require.Empty(t, f.fsFreezeStatus(failing))
	require.Equal(t, 1, f.api.Calls("unfreeze")-before)
	require.NoError(t, f.writeRecords(t.Context(), failing, 1, newCounter()), "the guest writes after the failed point")
}

// testKubeVirtThawsAtTheBound: a freeze nobody thaws ends at unfreezeTimeout.
func testKubeVirtThawsAtTheBound(t *testing.T, f *fixture) {
	ctx := t.Context()
	require.NoError(t, f.freezer.Freeze(ctx, bounded, time.Second))
	require.True(t, f.guests.Frozen(bounded))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return !f.guests.Frozen(bounded) && f.fsFreezeStatus(bounded) == "", nil
	}), "the guest thaws by itself at the bound")
}

// testRefusals: KubeVirt's answers for a caller without the right, and for a
// VMI that does not exist or does not run.
func testRefusals(t *testing.T, f *fixture) {
	ctx := t.Context()
	err := f.freezer.Freeze(ctx, types.NamespacedName{Namespace: ns, Name: "absent"}, time.Second)
	require.True(t, apierrors.IsNotFound(err), "%v", err)

	nobody := rest.CopyConfig(f.c.Config)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	unauthorized, err := freeze.NewRESTClient(nobody)
	require.NoError(t, err)
	err = unauthorized.Freeze(ctx, refused, time.Second)
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	require.False(t, f.guests.Frozen(refused))

	vmi := &kubevirtv1.VirtualMachineInstance{}
	require.NoError(t, f.c.Client.Get(ctx, refused, vmi))
	vmi.Status.Phase = kubevirtv1.Scheduling
	require.NoError(t, f.c.Client.Update(ctx, vmi))
	err = f.freezer.Freeze(ctx, refused, time.Second)
	require.True(t, apierrors.IsConflict(err), "%v", err)
	require.ErrorContains(t, err, "VM is not running")
}
