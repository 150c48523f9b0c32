package guest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Opener opens and closes DRBD devices for a holder; the DRBD simulator's
// Fabric satisfies it.
type Opener interface {
	OpenDevice(node string, minor int, holder string) error
	CloseDevice(node string, minor int, holder string) error
}

// Holder is what a running VMI's qemu does to its disks: it opens each DRBD
// device its volumes resolve to when it starts and closes them when it
// stops: virt-launcher's qemu keeps its block devices open while it runs,
// and DRBD refuses `secondary` and `down` meanwhile ("(-12) Device is held
// open by someone", SS_DEVICE_IN_USE in DRBD's drbd_strings.c). The KubeVirt simulator calls
// it (kubevirt.Options.Disks). The holder is the VMI's UID, and the devices
// are resolved again at close: a simulator that restarts knows nothing of
// what it opened, as KubeVirt's controllers know nothing of qemu's fds.
// Volumes that are not DRBD devices are not tracked.
type Holder struct {
	cluster *Cluster
	opener  Opener
	// NotHeld tells a close of a device the holder does not hold (already
	// closed) from a real failure; the DRBD simulator's ErrNotHeld.
	NotHeld error
}

// NewHolder opens the DRBD devices of cluster's VMIs through o.
func NewHolder(cluster *Cluster, o Opener, notHeld error) *Holder {
	return &Holder{cluster: cluster, opener: o, NotHeld: notHeld}
}

// Open opens the VMI's DRBD devices on its node.
func (h *Holder) Open(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	devs, err := h.drbdDevices(ctx, vmi)
	if err != nil {
		return err
	}
	for _, d := range devs {
		if err := h.opener.OpenDevice(d.node, d.minor, holderOf(vmi)); err != nil {
			return fmt.Errorf("qemu of VMI %s/%s cannot open /dev/drbd%d on %s: %w", vmi.Namespace, vmi.Name, d.minor, d.node, err)
		}
	}
	return nil
}

// Close closes the VMI's DRBD devices; closing one it does not hold is no
// error.
func (h *Holder) Close(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	devs, err := h.drbdDevices(ctx, vmi)
	if err != nil {
		return err
	}
	for _, d := range devs {
		if err := h.opener.CloseDevice(d.node, d.minor, holderOf(vmi)); err != nil && (h.NotHeld == nil || !errors.Is(err, h.NotHeld)) {
			return fmt.Errorf("closing /dev/drbd%d on %s for VMI %s/%s: %w", d.minor, d.node, vmi.Namespace, vmi.Name, err)
		}
	}
	return nil
}

// holderOf names the process that holds a VMI's devices in DRBD's openers.
func holderOf(vmi *kubevirtv1.VirtualMachineInstance) string {
	return "qemu " + vmi.Namespace + "/" + vmi.Name + " " + string(vmi.UID)
}

type drbdRef struct {
	node  string
	minor int
}

// drbdDevices resolves the VMI's claims to the DRBD devices behind them.
// A claim or volume not found yet is no device: the VMI cannot have opened
// it.
func (h *Holder) drbdDevices(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) ([]drbdRef, error) {
	c := h.cluster
	var out []drbdRef
	for _, ref := range volumes(vmi.Spec.Volumes) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.reader.Get(ctx, types.NamespacedName{Namespace: vmi.Namespace, Name: ref[1]}, pvc); err != nil || pvc.Spec.VolumeName == "" {
			continue
		}
		pv := &corev1.PersistentVolume{}
		if err := c.reader.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); err != nil {
			continue
		}
		l := pv.Spec.Local
		if l == nil || !strings.HasPrefix(l.Path, "/dev/drbd") {
			continue
		}
		minor, err := strconv.Atoi(strings.TrimPrefix(l.Path, "/dev/drbd"))
		if err != nil {
			return nil, fmt.Errorf("PersistentVolume %s: local path %q is not /dev/drbd<minor>", pv.Name, l.Path)
		}
		node := c.nodeNamed(ctx, affinityNode(pv))
		if node == "" {
			node = vmi.Status.NodeName
		}
		out = append(out, drbdRef{node: node, minor: minor})
	}
	return out, nil
}
