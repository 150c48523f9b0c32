package guest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/sim/guest"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

var vmKey = types.NamespacedName{Namespace: "apps", Name: "db"}

const (
	rootSize = 16 * guest.BlockSize // 16 blocks
	dataSize = 1 << 20              // 256 blocks
)

// errFakeIO is what the fake DRBD wraps when it fails an I/O.
var errFakeIO = errors.New("fake drbd: I/O error")

type devKey struct {
	node  string
	minor int
}

// fakeDRBD maps (node, minor) to a byte buffer. refuseAfter >= 0 fails every
// write once that many more have succeeded.
type fakeDRBD struct {
	devs        map[devKey][]byte
	refuseAfter int
	// landThenRefuse stores every write and then fails it, as a device
	// whose local write completed but whose replication failed.
	landThenRefuse bool
}

func newFakeDRBD() *fakeDRBD { return &fakeDRBD{devs: map[devKey][]byte{}, refuseAfter: -1} }

func (f *fakeDRBD) WriteDevice(node string, minor int, off int64, data []byte) error {
	d, ok := f.devs[devKey{node, minor}]
	if !ok {
		return fmt.Errorf("no /dev/drbd%d on %s", minor, node)
	}
	if f.refuseAfter == 0 {
		return fmt.Errorf("/dev/drbd%d on %s: %w", minor, node, errFakeIO)
	}
	if off+int64(len(data)) > int64(len(d)) {
		return fmt.Errorf("/dev/drbd%d on %s: write beyond the end: %w", minor, node, errFakeIO)
	}
	if f.refuseAfter > 0 {
		f.refuseAfter--
	}
	copy(d[off:], data)
	if f.landThenRefuse {
		return fmt.Errorf("/dev/drbd%d on %s: peer gone: %w", minor, node, errFakeIO)
	}
	return nil
}

func (f *fakeDRBD) ReadDevice(node string, minor int, off int64, n int) ([]byte, error) {
	d, ok := f.devs[devKey{node, minor}]
	if !ok {
		return nil, fmt.Errorf("no /dev/drbd%d on %s", minor, node)
	}
	if off+int64(n) > int64(len(d)) {
		return nil, fmt.Errorf("/dev/drbd%d on %s: read beyond the end: %w", minor, node, errFakeIO)
	}
	return bytes.Clone(d[off : off+int64(n)]), nil
}

func (f *fakeDRBD) DeviceSize(node string, minor int) (int64, error) {
	d, ok := f.devs[devKey{node, minor}]
	if !ok {
		return 0, fmt.Errorf("no /dev/drbd%d on %s", minor, node)
	}
	return int64(len(d)), nil
}

// volumes of the VM: a PVC, a DataVolume, and a cloud-init disk the guest
// must skip.
func volumes() []kubevirtv1.Volume {
	return []kubevirtv1.Volume{
		{Name: "rootdisk", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "db-root"}}}},
		{Name: "cloudinit", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "#cloud-config"}}},
		{Name: "data", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "db-data"}}},
	}
}

func vm() *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: vmKey.Namespace, Name: vmKey.Name},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: volumes()}}},
	}
}

func vmi(phase kubevirtv1.VirtualMachineInstancePhase, withVolumes bool) *kubevirtv1.VirtualMachineInstance {
	i := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: vmKey.Namespace, Name: vmKey.Name},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{Phase: phase, NodeName: "kubevirt-simulator"},
	}
	if withVolumes {
		i.Spec.Volumes = volumes()
	}
	return i
}

// pvc is a claim of size bytes bound to pv, with its capacity in status like
// the storage simulator leaves it.
func pvc(name, pv string, size int64) *corev1.PersistentVolumeClaim {
	q := *resource.NewQuantity(size, resource.BinarySI)
	block := corev1.PersistentVolumeBlock
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: vmKey.Namespace, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			VolumeName: pv, VolumeMode: &block,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: q}},
	}
}

func csiPV(name string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			CSI: &corev1.CSIPersistentVolumeSource{Driver: storagesim.Driver, VolumeHandle: name}}},
	}
}

func drbdPV(name string, minor int, node string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: fmt.Sprintf("/dev/drbd%d", minor)}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
}

func newClient(objs ...client.Object) client.Client {
	return crfake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
}

// rawCluster is a cluster whose VM runs (vmiPhase; "" for no VMI) on raw
// volumes of the storage simulator: sparse files in a temp dir.
type rawCluster struct {
	*guest.Cluster
	dir string
}

func (r rawCluster) file(pv string) string { return storagesim.DeviceFile(r.dir, pv) }

func newRawCluster(t *testing.T, name string, phase kubevirtv1.VirtualMachineInstancePhase) rawCluster {
	t.Helper()
	dir := t.TempDir()
	for pv, size := range map[string]int64{"pv-root": rootSize, "pv-data": dataSize} {
		require.NoError(t, os.WriteFile(storagesim.DeviceFile(dir, pv), nil, 0o600))
		require.NoError(t, os.Truncate(storagesim.DeviceFile(dir, pv), size))
	}
	objs := []client.Object{vm(), pvc("db-root", "pv-root", rootSize), pvc("db-data", "pv-data", dataSize), csiPV("pv-root"), csiPV("pv-data")}
	if phase != "" {
		objs = append(objs, vmi(phase, true))
	}
	return rawCluster{Cluster: guest.NewCluster(name, newClient(objs...), nil, dir), dir: dir}
}

// drbdCluster is a cluster whose VM's claims are bound to DRBD PVs on node
// dr-1 (minors 1000 for rootdisk, 1001 for data) of fake.
func drbdCluster(name string, fake *fakeDRBD, objs ...client.Object) *guest.Cluster {
	objs = append(objs, vm(), pvc("db-root", "pv-drbd-root", rootSize), pvc("db-data", "pv-drbd-data", dataSize),
		drbdPV("pv-drbd-root", 1000, "dr-1"), drbdPV("pv-drbd-data", 1001, "dr-1"))
	return guest.NewCluster(name, newClient(objs...), fake, "")
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func patchFile(t *testing.T, path string, off int64, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(data, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestWriteThenVerifyIntact(t *testing.T) {
	ctx := context.Background()
	c := newRawCluster(t, "primary", kubevirtv1.Running)
	g := guest.New()

	ack, err := g.Write(ctx, c.Cluster, vmKey, 10)
	require.NoError(t, err)
	require.Equal(t, guest.Ack{Acknowledged: 10, LastSeq: 10}, ack)
	ack, err = g.Write(ctx, c.Cluster, vmKey, 10)
	require.NoError(t, err)
	require.Equal(t, guest.Ack{Acknowledged: 10, LastSeq: 20}, ack, "sequence numbers go on across batches")

	res, err := g.Verify(ctx, c.Cluster, vmKey)
	require.NoError(t, err)
	require.Equal(t, "lost 0, corrupt 0 of 20 acknowledged writes", res.String())
	require.Equal(t, 20, res.Intact)

	// Both disks were written, at their first and last blocks among others;
	// the cloud-init volume is no disk of the guest's.
	root, data := readFile(t, c.file("pv-root")), readFile(t, c.file("pv-data"))
	for name, b := range map[string][]byte{"rootdisk": root, "data": data} {
		require.False(t, isZero(b[len(b)-guest.BlockSize:]), "last block of %s", name)
		require.False(t, isZero(b[:guest.BlockSize]), "first block of %s", name)
	}
	require.Equal(t, []guest.DiskSum{{Name: "rootdisk", Checksum: sha(root)}, {Name: "data", Checksum: sha(data)}}, res.Disks)

	j, err := json.Marshal(res)
	require.NoError(t, err)
	require.JSONEq(t, fmt.Sprintf(`{"acknowledged":20,"intact":20,"lost":0,"corrupt":0,"disks":[{"name":"rootdisk","checksum":%q},{"name":"data","checksum":%q}]}`,
		sha(root), sha(data)), string(j))
	j, err = json.Marshal(ack)
	require.NoError(t, err)
	require.JSONEq(t, `{"acknowledged":10,"lastSeq":20}`, string(j))
}

func TestWriteSpreadsOverTheWholeDisk(t *testing.T) {
	ctx := context.Background()
	c := newRawCluster(t, "primary", kubevirtv1.Running)
	g := guest.New()
	// 32 writes: 16 per disk, which fills the 16 blocks of rootdisk.
	_, err := g.Write(ctx, c.Cluster, vmKey, 32)
	require.NoError(t, err)
	root := readFile(t, c.file("pv-root"))
	for i := 0; i < rootSize/guest.BlockSize; i++ {
		require.False(t, isZero(root[i*guest.BlockSize:(i+1)*guest.BlockSize]), "block %d of rootdisk", i)
	}
	data := readFile(t, c.file("pv-data"))
	var firstHalf, secondHalf int
	for i := 0; i < dataSize/guest.BlockSize; i++ {
		if isZero(data[i*guest.BlockSize : (i+1)*guest.BlockSize]) {
			continue
		}
		if i < dataSize/guest.BlockSize/2 {
			firstHalf++
		} else {
			secondHalf++
		}
	}
	require.Equal(t, 16, firstHalf+secondHalf)
	require.GreaterOrEqual(t, firstHalf, 4, "writes spread over the disk, not packed at its start")
	require.GreaterOrEqual(t, secondHalf, 4, "writes spread over the disk, not packed at its start")
}

func TestVerifyCountsCorruptBlocks(t *testing.T) {
	ctx := context.Background()
	t.Run("garbage over the last block", func(t *testing.T) {
		c := newRawCluster(t, "primary", kubevirtv1.Running)
		g := guest.New()
		_, err := g.Write(ctx, c.Cluster, vmKey, 12)
		require.NoError(t, err)
		patchFile(t, c.file("pv-root"), rootSize-guest.BlockSize, bytes.Repeat([]byte{0xA5}, guest.BlockSize))

		res, err := g.Verify(ctx, c.Cluster, vmKey)
		require.NoError(t, err)
		require.Equal(t, guest.Result{Acknowledged: 12, Intact: 11, Corrupt: 1, Disks: res.Disks}, res)
		require.Equal(t, "lost 0, corrupt 1 of 12 acknowledged writes", res.String())
	})
	t.Run("one flipped byte", func(t *testing.T) {
		c := newRawCluster(t, "primary", kubevirtv1.Running)
		g := guest.New()
		_, err := g.Write(ctx, c.Cluster, vmKey, 12)
		require.NoError(t, err)
		b := readFile(t, c.file("pv-data"))
		patchFile(t, c.file("pv-data"), 100, []byte{b[100] ^ 1})

		res, err := g.Verify(ctx, c.Cluster, vmKey)
		require.NoError(t, err)
		require.Equal(t, 1, res.Corrupt)
		require.Equal(t, 11, res.Intact)
	})
	t.Run("blocks swapped", func(t *testing.T) {
		// A valid block of the VM at the wrong place (a misaligned layout) is corrupt.
		c := newRawCluster(t, "primary", kubevirtv1.Running)
		g := guest.New()
		_, err := g.Write(ctx, c.Cluster, vmKey, 12)
		require.NoError(t, err)
		root := readFile(t, c.file("pv-root"))
		patchFile(t, c.file("pv-root"), 0, root[rootSize-guest.BlockSize:])

		res, err := g.Verify(ctx, c.Cluster, vmKey)
		require.NoError(t, err)
		require.Equal(t, 1, res.Corrupt)
		require.Equal(t, 0, res.Lost)
	})
}

func TestVerifyCountsLostBlocks(t *testing.T) {
	ctx := context.Background()
	t.Run("zeroed block", func(t *testing.T) {
		c := newRawCluster(t, "primary", kubevirtv1.Running)
		g := guest.New()
		_, err := g.Write(ctx, c.Cluster, vmKey, 12)
		require.NoError(t, err)
		patchFile(t, c.file("pv-root"), 0, make([]byte, guest.BlockSize))

		res, err := g.Verify(ctx, c.Cluster, vmKey)
		require.NoError(t, err)
		require.Equal(t, guest.Result{Acknowledged: 12, Intact: 11, Lost: 1, Disks: res.Disks}, res)
		require.Equal(t, "lost 1, corrupt 0 of 12 acknowledged writes", res.String())
	})
	t.Run("older writes of the VM", func(t *testing.T) {
		// A replica that stopped before the last writes holds older writes:
		// lost, not corrupt.
		c := newRawCluster(t, "primary", kubevirtv1.Running)
		g := guest.New()
		_, err := g.Write(ctx, c.Cluster, vmKey, 32) // 16 per disk: every block of rootdisk once
		require.NoError(t, err)
		before := readFile(t, c.file("pv-root"))
		_, err = g.Write(ctx, c.Cluster, vmKey, 8) // 4 blocks of rootdisk overwritten
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(c.file("pv-root"), before, 0o600))

		res, err := g.Verify(ctx, c.Cluster, vmKey)
		require.NoError(t, err)
		// 16 blocks of rootdisk and 20 of data carry a last acknowledged write.
		require.Equal(t, guest.Result{Acknowledged: 36, Intact: 32, Lost: 4, Disks: res.Disks}, res)
	})
}

func TestVerifyThroughDRBDOnTheDRCluster(t *testing.T) {
	ctx := context.Background()
	primary := newRawCluster(t, "primary", kubevirtv1.Running)
	g := guest.New()
	_, err := g.Write(ctx, primary.Cluster, vmKey, 24)
	require.NoError(t, err)
	want, err := g.Verify(ctx, primary.Cluster, vmKey)
	require.NoError(t, err)

	// The DR copy's disks are DRBD devices replicated from the primary's.
	fake := newFakeDRBD()
	fake.devs[devKey{"dr-1", 1000}] = readFile(t, primary.file("pv-root"))
	fake.devs[devKey{"dr-1", 1001}] = readFile(t, primary.file("pv-data"))
	dr := drbdCluster("dr", fake) // the VM does not run there: Verify reads what it would boot from

	got, err := g.Verify(ctx, dr, vmKey)
	require.NoError(t, err)
	require.Equal(t, "lost 0, corrupt 0 of 24 acknowledged writes", got.String())
	require.Equal(t, want, got, "same blocks and same disk checksums on both clusters")

	_, err = g.Write(ctx, dr, vmKey, 1)
	require.ErrorIs(t, err, guest.ErrNotRunning, "the DR copy does not run yet")

	// Once the DR copy runs (its VMI without volumes: the template's are used),
	// the guest writes through DRBD and the shared log covers both clusters.
	dr = drbdCluster("dr", fake, vmi(kubevirtv1.Running, false))
	ack, err := g.Write(ctx, dr, vmKey, 6)
	require.NoError(t, err)
	require.Equal(t, guest.Ack{Acknowledged: 6, LastSeq: 30}, ack)
	got, err = g.Verify(ctx, dr, vmKey)
	require.NoError(t, err)
	require.Equal(t, guest.Result{Acknowledged: 30, Intact: 30, Disks: got.Disks}, got)
	require.Equal(t, sha(fake.devs[devKey{"dr-1", 1000}]), got.Disks[0].Checksum)

	// The primary's stale copy missed the writes made on the DR cluster.
	stale, err := g.Verify(ctx, primary.Cluster, vmKey)
	require.NoError(t, err)
	require.Equal(t, 6, stale.Lost)
	require.Equal(t, 0, stale.Corrupt)
}

func TestWriteRequiresARunningVM(t *testing.T) {
	ctx := context.Background()
	for _, phase := range []kubevirtv1.VirtualMachineInstancePhase{"", kubevirtv1.Scheduling, kubevirtv1.Succeeded} {
		t.Run(string(phase), func(t *testing.T) {
			c := newRawCluster(t, "dr", phase)
			g := guest.New()
			ack, err := g.Write(ctx, c.Cluster, vmKey, 3)
			require.ErrorIs(t, err, guest.ErrNotRunning)
			var nr *guest.NotRunningError
			require.ErrorAs(t, err, &nr)
			require.Contains(t, err.Error(), "VM apps/db is not running on cluster dr")
			require.Zero(t, ack.Acknowledged)
			require.True(t, isZero(readFile(t, c.file("pv-root"))), "nothing written")
		})
	}
}

func TestDRBDRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("device smaller than the claim", func(t *testing.T) {
		// A product that carves DRBD's metadata out of the disk leaves the
		// guest a smaller disk than its claim: the last block cannot be written.
		fake := newFakeDRBD()
		fake.devs[devKey{"dr-1", 1000}] = make([]byte, rootSize-guest.BlockSize)
		fake.devs[devKey{"dr-1", 1001}] = make([]byte, dataSize)
		c := drbdCluster("primary", fake, vmi(kubevirtv1.Running, true))
		g := guest.New()

		ack, err := g.Write(ctx, c, vmKey, 10)
		require.ErrorIs(t, err, guest.ErrIO)
		var ioErr *guest.IOError
		require.ErrorAs(t, err, &ioErr)
		require.Equal(t, "rootdisk", ioErr.Disk)
		require.Equal(t, int64(rootSize/guest.BlockSize-1), ioErr.Block, "the last block")
		require.Equal(t, guest.Ack{}, ack)

		res, err := g.Verify(ctx, c, vmKey)
		require.NoError(t, err)
		require.Equal(t, 0, res.Acknowledged)
	})
	t.Run("device shrunk after the writes", func(t *testing.T) {
		fake := newFakeDRBD()
		fake.devs[devKey{"dr-1", 1000}] = make([]byte, rootSize)
		fake.devs[devKey{"dr-1", 1001}] = make([]byte, dataSize)
		c := drbdCluster("primary", fake, vmi(kubevirtv1.Running, true))
		g := guest.New()
		_, err := g.Write(ctx, c, vmKey, 10)
		require.NoError(t, err)
		full := sha(fake.devs[devKey{"dr-1", 1000}])
		fake.devs[devKey{"dr-1", 1000}] = fake.devs[devKey{"dr-1", 1000}][:rootSize-guest.BlockSize]

		res, err := g.Verify(ctx, c, vmKey)
		require.NoError(t, err)
		require.Equal(t, guest.Result{Acknowledged: 10, Intact: 9, Corrupt: 1, Disks: res.Disks}, res)
		require.NotEqual(t, full, res.Disks[0].Checksum)
	})
	t.Run("I/O error mid-batch", func(t *testing.T) {
		fake := newFakeDRBD()
		fake.devs[devKey{"dr-1", 1000}] = make([]byte, rootSize)
		fake.devs[devKey{"dr-1", 1001}] = make([]byte, dataSize)
		c := drbdCluster("primary", fake, vmi(kubevirtv1.Running, true))
		g := guest.New()
		fake.refuseAfter = 4

		ack, err := g.Write(ctx, c, vmKey, 10)
		require.ErrorIs(t, err, guest.ErrIO)
		require.ErrorIs(t, err, errFakeIO, "the device's error is kept")
		require.Equal(t, guest.Ack{Acknowledged: 4, LastSeq: 4}, ack)

		fake.refuseAfter = -1
		ack, err = g.Write(ctx, c, vmKey, 2)
		require.NoError(t, err)
		require.Equal(t, guest.Ack{Acknowledged: 2, LastSeq: 7}, ack, "the refused write's number is not reused")
		res, err := g.Verify(ctx, c, vmKey)
		require.NoError(t, err)
		require.Equal(t, "lost 0, corrupt 0 of 6 acknowledged writes", res.String())
		require.Equal(t, 6, res.Intact)
	})
	t.Run("refused write that landed", func(t *testing.T) {
		// A refused write promised nothing: finding it on the disk instead of
		// the block's last acknowledged write is no loss.
		fake := newFakeDRBD()
		fake.devs[devKey{"dr-1", 1000}] = make([]byte, rootSize)
		fake.devs[devKey{"dr-1", 1001}] = make([]byte, dataSize)
		c := drbdCluster("primary", fake, vmi(kubevirtv1.Running, true))
		g := guest.New()
		_, err := g.Write(ctx, c, vmKey, 32) // every block of rootdisk once
		require.NoError(t, err)
		before := bytes.Clone(fake.devs[devKey{"dr-1", 1000}])
		fake.landThenRefuse = true

		ack, err := g.Write(ctx, c, vmKey, 5)
		require.ErrorIs(t, err, guest.ErrIO)
		require.Equal(t, guest.Ack{Acknowledged: 0, LastSeq: 32}, ack)
		require.NotEqual(t, before, fake.devs[devKey{"dr-1", 1000}], "the refused write is on the device")

		res, err := g.Verify(ctx, c, vmKey)
		require.NoError(t, err)
		require.Equal(t, guest.Result{Acknowledged: 32, Intact: 32, Disks: res.Disks}, res)
	})
}

func isZero(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }

func TestDRBDNodeIsTheNodeWithTheAffinityHostname(t *testing.T) {
	// Node affinity names the kubernetes.io/hostname label; the DRBD simulator
	// knows the node by its name.
	ctx := context.Background()
	fake := newFakeDRBD()
	fake.devs[devKey{"worker-a", 1000}] = make([]byte, rootSize)
	fake.devs[devKey{"worker-a", 1001}] = make([]byte, dataSize)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-a", Labels: map[string]string{corev1.LabelHostname: "dr-1"}}}
	c := drbdCluster("dr", fake, node, vmi(kubevirtv1.Running, true))
	g := guest.New()

	_, err := g.Write(ctx, c, vmKey, 4)
	require.NoError(t, err)
	require.False(t, isZero(fake.devs[devKey{"worker-a", 1000}]))
	res, err := g.Verify(ctx, c, vmKey)
	require.NoError(t, err)
	require.Equal(t, 4, res.Intact)
}

// TestAGuestStoppedFrozenBootsThawed: a freeze lives in the running guest;
// stopped frozen, the VM boots again (a new VMI, here on another cluster)
// with its file systems thawed, and writes there at once.
func TestAGuestStoppedFrozenBootsThawed(t *testing.T) {
	ctx := context.Background()
	booted := func(name string, uid types.UID) *guest.Cluster {
		dir := t.TempDir()
		for pv, size := range map[string]int64{"pv-root": rootSize, "pv-data": dataSize} {
			require.NoError(t, os.WriteFile(storagesim.DeviceFile(dir, pv), nil, 0o600))
			require.NoError(t, os.Truncate(storagesim.DeviceFile(dir, pv), size))
		}
		v := vmi(kubevirtv1.Running, true)
		v.UID = uid
		return guest.NewCluster(name, newClient(vm(), v, pvc("db-root", "pv-root", rootSize), pvc("db-data", "pv-data", dataSize), csiPV("pv-root"), csiPV("pv-data")), nil, dir)
	}
	primary, dr := booted("primary", "boot-1"), booted("dr", "boot-2")
	g := guest.New()
	_, err := g.Write(ctx, primary, vmKey, 4)
	require.NoError(t, err)
	require.NoError(t, g.Freeze(vmKey))

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = g.Write(short, primary, vmKey, 4)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the frozen guest's writes wait for the thaw")

	bounded, cancelBounded := context.WithTimeout(ctx, 10*time.Second)
	defer cancelBounded()
	_, err = g.Write(bounded, dr, vmKey, 4)
	require.NoError(t, err, "booted again, the guest is not frozen")
	require.False(t, g.Frozen(vmKey))
}
