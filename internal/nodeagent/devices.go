package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrDeviceMissing marks a backing device that cannot be found (yet): the PVC is
// missing or unbound, or the kubelet has not staged the block device on this node.
var ErrDeviceMissing = errors.New("backing device missing")

// DeviceResolver finds the block device of a backing or metadata PVC the agent
// has checked (backingClaim): bound, in Block mode, of the DRBDResource's own
// protection request.
type DeviceResolver interface {
	// DevicePath returns the /dev path of pvc's volume on this node. Errors
	// wrapping ErrDeviceMissing are expected while the volume is being staged.
	DevicePath(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, error)
}

// KubeletDevices resolves a bound block-mode PVC through the kubelet's
// volumeDevices folder: <KubeletDir>/plugins/kubernetes.io/csi/volumeDevices/<pv>/dev/*.
type KubeletDevices struct {
	KubeletDir string
}

// DevicePath implements DeviceResolver.
func (k *KubeletDevices) DevicePath(_ context.Context, pvc *corev1.PersistentVolumeClaim) (string, error) {
	key := client.ObjectKeyFromObject(pvc)
	dir := filepath.Join(k.KubeletDir, "plugins", "kubernetes.io", "csi", "volumeDevices", pvc.Spec.VolumeName, "dev")
	entries, _ := filepath.Glob(filepath.Join(dir, "*"))
	sort.Strings(entries)
	if len(entries) == 0 {
		return "", fmt.Errorf("%w: PVC %s (PV %s) is not staged on this node: %s is empty or missing; is a pod using the PVC scheduled here?",
			ErrDeviceMissing, key, pvc.Spec.VolumeName, dir)
	}
	return devPath(entries[0])
}

// devPath turns the kubelet's per-pod device file (a symlink or a bind-mounted
// device node) into a /dev path the resource file may name.
func devPath(p string) (string, error) {
	if target, err := filepath.EvalSymlinks(p); err == nil && strings.HasPrefix(target, "/dev/") {
		return target, nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrDeviceMissing, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		return "", fmt.Errorf("%w: %s is not a block device", ErrDeviceMissing, p)
	}
	rdev := uint64(st.Rdev) //nolint:unconvert // Rdev's type differs between architectures
	major, minor := (rdev>>8)&0xfff|(rdev>>32)&^0xfff, rdev&0xff|(rdev>>12)&^0xff
	return fmt.Sprintf("/dev/block/%d:%d", major, minor), nil
}
