package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

// DRBD reads and writes DRBD devices of simulated nodes; the DRBD simulator's
// Fabric satisfies it. WriteDevice fails (wrapping the simulator's ErrIO) when
// DRBD would fail the I/O.
type DRBD interface {
	WriteDevice(node string, minor int, off int64, data []byte) error
	ReadDevice(node string, minor int, off int64, n int) ([]byte, error)
	DeviceSize(node string, minor int) (int64, error)
}

// Cluster is how the guest reaches the VMs and disks of one cluster.
type Cluster struct {
	name      string
	reader    client.Reader
	drbd      DRBD
	deviceDir string
}

// NewCluster describes cluster name: r reads its VMs, VMIs, PVCs and PVs, drbd
// reaches its DRBD devices (nil if it has none) and deviceDir is the
// storage simulator's Options.DeviceDir (empty if raw volumes have no bytes).
func NewCluster(name string, r client.Reader, drbd DRBD, deviceDir string) *Cluster {
	return &Cluster{name: name, reader: r, drbd: drbd, deviceDir: deviceDir}
}

// Name is the cluster's name.
func (c *Cluster) Name() string { return c.name }

// device is the bytes behind one disk.
type device interface {
	// size is how many bytes the device has (which may be fewer than the
	// disk's advertised size).
	size() (int64, error)
	writeAt(off int64, data []byte) error
	readAt(off int64, n int) ([]byte, error)
	close() error
	String() string
}

// disk is one PVC-backed volume of a VM as the guest sees it.
type disk struct {
	name   string // the volume's name
	claim  string
	size   int64 // advertised: the PVC's capacity, else its request
	dev    device
	devLen int64 // dev.size(), read once
}

func (d *disk) blocks() int64 { return d.size / BlockSize }

// volumes is the VM's PVC-backed volumes: (volume name, claim name).
func volumes(vols []kubevirtv1.Volume) [][2]string {
	var out [][2]string
	for _, v := range vols {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, [2]string{v.Name, v.PersistentVolumeClaim.ClaimName})
		case v.DataVolume != nil:
			out = append(out, [2]string{v.Name, v.DataVolume.Name})
		}
	}
	return out
}

// openDisks resolves the VM's volumes to devices on cluster c. node is the
// VMI's node ("" if none), used for a DRBD PV without node affinity.
func (c *Cluster) openDisks(ctx context.Context, ns string, vols []kubevirtv1.Volume, node string) ([]*disk, error) {
	refs := volumes(vols)
	if len(refs) == 0 {
		return nil, errors.New("the VM has no persistentVolumeClaim or dataVolume volume")
	}
	var disks []*disk
	fail := func(err error) ([]*disk, error) {
		closeDisks(disks)
		return nil, err
	}
	for _, ref := range refs {
		d, err := c.openDisk(ctx, ns, ref[0], ref[1], node)
		if err != nil {
			return fail(fmt.Errorf("disk %s (claim %s/%s) on cluster %s: %w", ref[0], ns, ref[1], c.name, err))
		}
		disks = append(disks, d)
	}
	return disks, nil
}

func (c *Cluster) openDisk(ctx context.Context, ns, volume, claim, node string) (*disk, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: claim}, pvc); err != nil {
		return nil, err
	}
	size, ok := pvc.Status.Capacity[corev1.ResourceStorage]
	if !ok {
		size, ok = pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	if !ok || size.Value() < BlockSize {
		return nil, fmt.Errorf("the claim has no capacity nor request of at least %d bytes", BlockSize)
	}
	if pvc.Spec.VolumeName == "" {
		return nil, errors.New("the claim is not bound to a PersistentVolume")
	}
	pv := &corev1.PersistentVolume{}
	if err := c.reader.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return nil, err
	}
	dev, err := c.openDevice(ctx, pv, node)
	if err != nil {
		return nil, fmt.Errorf("PersistentVolume %s: %w", pv.Name, err)
	}
	n, err := dev.size()
	if err != nil {
		_ = dev.close()
		return nil, fmt.Errorf("size of %s: %w", dev, err)
	}
	return &disk{name: volume, claim: claim, size: size.Value(), dev: dev, devLen: n}, nil
}

func (c *Cluster) openDevice(ctx context.Context, pv *corev1.PersistentVolume, vmiNode string) (device, error) {
	if l := pv.Spec.Local; l != nil && strings.HasPrefix(l.Path, "/dev/drbd") {
		minor, err := strconv.Atoi(strings.TrimPrefix(l.Path, "/dev/drbd"))
		if err != nil {
			return nil, fmt.Errorf("local path %q is not /dev/drbd<minor>", l.Path)
		}
		node := c.nodeNamed(ctx, affinityNode(pv))
		if node == "" {
			node = vmiNode
		}
		if node == "" {
			return nil, fmt.Errorf("%s: no node affinity on %s names the node, and the VM does not run", l.Path, corev1.LabelHostname)
		}
		if c.drbd == nil {
			return nil, fmt.Errorf("%s: cluster %s was given no DRBD", l.Path, c.name)
		}
		return &drbdDevice{drbd: c.drbd, node: node, minor: minor}, nil
	}
	if c.deviceDir == "" {
		return nil, fmt.Errorf("not a DRBD volume, and cluster %s was given no device dir", c.name)
	}
	path := storagesim.DeviceFile(c.deviceDir, pv.Name)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return &fileDevice{f: f}, nil
}

// affinityNode is the node a local PV's required node affinity names
// (kubernetes.io/hostname In [node]), or "".
func affinityNode(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) > 0 {
				return e.Values[0]
			}
		}
	}
	return ""
}

// nodeNamed is the name of the node whose kubernetes.io/hostname label is
// hostname: the DRBD simulator knows nodes by name, node affinity by that
// label. Without exactly one such Node (or Nodes to read), it is hostname.
func (c *Cluster) nodeNamed(ctx context.Context, hostname string) string {
	if hostname == "" {
		return ""
	}
	nodes := &corev1.NodeList{}
	if err := c.reader.List(ctx, nodes, client.MatchingLabels{corev1.LabelHostname: hostname}); err != nil || len(nodes.Items) != 1 {
		return hostname
	}
	return nodes.Items[0].Name
}

func closeDisks(disks []*disk) {
	for _, d := range disks {
		_ = d.dev.close()
	}
}

// fileDevice is a raw volume of the storage simulator: a sparse file.
type fileDevice struct{ f *os.File }

func (d *fileDevice) size() (int64, error) {
	st, err := d.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (d *fileDevice) writeAt(off int64, data []byte) error {
	_, err := d.f.WriteAt(data, off)
	return err
}

func (d *fileDevice) readAt(off int64, n int) ([]byte, error) {
	b := make([]byte, n)
	m, err := d.f.ReadAt(b, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return b[:m], err
}

func (d *fileDevice) close() error   { return d.f.Close() }
func (d *fileDevice) String() string { return d.f.Name() }

// drbdDevice is /dev/drbd<minor> on a node, through the DRBD simulator.
type drbdDevice struct {
	drbd  DRBD
	node  string
	minor int
}

func (d *drbdDevice) size() (int64, error) { return d.drbd.DeviceSize(d.node, d.minor) }
func (d *drbdDevice) writeAt(off int64, data []byte) error {
	return d.drbd.WriteDevice(d.node, d.minor, off, data)
}
func (d *drbdDevice) readAt(off int64, n int) ([]byte, error) {
	return d.drbd.ReadDevice(d.node, d.minor, off, n)
}
func (d *drbdDevice) close() error { return nil }
func (d *drbdDevice) String() string {
	return fmt.Sprintf("/dev/drbd%d on node %s", d.minor, d.node)
}
