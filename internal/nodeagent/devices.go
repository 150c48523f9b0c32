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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// ErrDeviceMissing marks a backing device that cannot be found (yet): the PVC is
// missing or unbound, or the kubelet has not staged the block device on this node.
var ErrDeviceMissing = errors.New("backing device missing")

// DeviceResolver finds the backing block device of a volume that names a
// backingPVC instead of a devicePath.
type DeviceResolver interface {
	// DevicePath returns a /dev path for the volume's backing PVC in namespace.
	// Errors wrapping ErrDeviceMissing are expected while the PVC is being set up.
	DevicePath(ctx context.Context, namespace string, vol srv1alpha1.DRBDVolume) (string, error)
}

// KubeletDevices resolves a block-mode PVC through the kubelet's volumeDevices
// folder: PVC -> bound PV -> <KubeletDir>/plugins/kubernetes.io/csi/volumeDevices/<pv>/dev/*.
type KubeletDevices struct {
	// Reader reads PVCs; use an uncached reader so the agent does not cache every
	// PVC of the cluster.
	Reader     client.Reader
	KubeletDir string
}

// DevicePath implements DeviceResolver.
func (k *KubeletDevices) DevicePath(ctx context.Context, namespace string, vol srv1alpha1.DRBDVolume) (string, error) {
	if vol.BackingPVC == nil {
		return "", fmt.Errorf("%s: neither devicePath nor backingPVC is set", volumeName(vol.Number))
	}
	var pvc corev1.PersistentVolumeClaim
	key := types.NamespacedName{Namespace: namespace, Name: vol.BackingPVC.Name}
	if err := k.Reader.Get(ctx, key, &pvc); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("%w: PVC %s not found", ErrDeviceMissing, key)
		}
		return "", err
	}
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("%w: PVC %s is not bound to a PersistentVolume yet", ErrDeviceMissing, key)
	}
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
