package vmdisks

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Reasons of a Problem, used as condition reasons by the protection flow.
const (
	// ReasonUnsupportedVolume: a disk is not a PVC or DataVolume, is
	// hot-plugged, or the VM has no disk to replicate.
	ReasonUnsupportedVolume = "UnsupportedVolume"
	// ReasonPVCNotFound: a disk's PVC does not exist.
	ReasonPVCNotFound = "PVCNotFound"
	// ReasonPVCNotBound: a disk's PVC is not Bound.
	ReasonPVCNotBound = "PVCNotBound"
	// ReasonVolumeModeNotBlock: a disk's PVC is not volumeMode Block.
	ReasonVolumeModeNotBlock = "VolumeModeNotBlock"
	// ReasonNoStorageMapping: the zone maps no DR StorageClass for a PVC's.
	ReasonNoStorageMapping = "NoStorageMapping"
)

// Problem is why a VM's disks cannot be replicated: a reason for conditions
// and a message that says what to fix.
type Problem struct{ Reason, Message string }

func (p *Problem) Error() string { return p.Message }

func problem(reason, format string, args ...any) *Problem {
	return &Problem{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Disk is a volume of a VM backed by a PersistentVolumeClaim.
type Disk struct {
	// Name is the volume's name in the VM.
	Name string
	// Claim is its PVC (a DataVolume's PVC has the DataVolume's name).
	Claim string
}

// Disks lists the disks of vm to replicate, in the order of its volumes (the
// DRBD volume numbers). Configuration volumes are skipped; any other kind of
// volume, a hot-plugged one, or no disk at all is a *Problem.
func Disks(vm *kubevirtv1.VirtualMachine) ([]Disk, error) {
	if vm.Spec.Template == nil {
		return nil, problem(ReasonUnsupportedVolume, "VirtualMachine %s/%s has no template and so no disks to replicate", vm.Namespace, vm.Name)
	}
	var out []Disk
	for _, v := range vm.Spec.Template.Spec.Volumes {
		var claim string
		var hotplug bool
		switch {
		case v.PersistentVolumeClaim != nil:
			claim, hotplug = v.PersistentVolumeClaim.ClaimName, v.PersistentVolumeClaim.Hotpluggable
		case v.DataVolume != nil:
			claim, hotplug = v.DataVolume.Name, v.DataVolume.Hotpluggable
		case configVolume(v):
			continue
		default:
			return nil, problem(ReasonUnsupportedVolume,
				"disk %q is a %s volume; only PersistentVolumeClaim and DataVolume disks can be replicated: move its data to a Block-mode PVC or DataVolume, or remove the disk",
				v.Name, volumeKind(v))
		}
		if hotplug {
			return nil, problem(ReasonUnsupportedVolume, "disk %q of VirtualMachine %s/%s is hot-plugged; hot-plugged volumes cannot be replicated: unplug it or make it a regular disk first",
				v.Name, vm.Namespace, vm.Name)
		}
		out = append(out, Disk{Name: v.Name, Claim: claim})
	}
	if len(out) == 0 {
		return nil, problem(ReasonUnsupportedVolume, "VirtualMachine %s/%s has no PersistentVolumeClaim or DataVolume disk to replicate", vm.Namespace, vm.Name)
	}
	return out, nil
}

// ClaimNotFound is the Problem of a disk whose PVC does not exist on cluster.
func ClaimNotFound(d Disk, namespace, cluster string) error {
	return problem(ReasonPVCNotFound, "disk %q: PVC %s/%s does not exist on %s", d.Name, namespace, d.Claim, cluster)
}

// CheckClaim checks a disk's PVC: Bound, volumeMode Block (DRBD replicates
// block devices), and a StorageClass the zone maps to a DR StorageClass.
func CheckClaim(d Disk, pvc *corev1.PersistentVolumeClaim, z *srv1alpha1.ProtectionZone) error {
	if pvc.Status.Phase != corev1.ClaimBound {
		phase := string(pvc.Status.Phase)
		if phase == "" {
			phase = string(corev1.ClaimPending)
		}
		return problem(ReasonPVCNotBound, "disk %q: PVC %s is %s, not Bound; protect the VM once its PVC is Bound", d.Name, d.Claim, phase)
	}
	if pvc.Spec.VolumeMode == nil || *pvc.Spec.VolumeMode != corev1.PersistentVolumeBlock {
		return problem(ReasonVolumeModeNotBlock, "disk %q: PVC %s has volumeMode Filesystem; DRBD replicates block devices: move the disk to a volumeMode Block PVC", d.Name, d.Claim)
	}
	class := ""
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	if _, ok := z.MappedStorageClass(class); !ok {
		return problem(ReasonNoStorageMapping, "disk %q: PVC %s uses StorageClass %q, which has no entry in ProtectionZone %s spec.storageMappings; add a mapping to a Block-capable DR StorageClass",
			d.Name, d.Claim, class, z.Name)
	}
	return nil
}

// configVolume reports volumes that carry configuration generated from the VM
// spec rather than data; they are not replicated and need no PVC.
func configVolume(v kubevirtv1.Volume) bool {
	return v.CloudInitNoCloud != nil || v.CloudInitConfigDrive != nil || v.ConfigMap != nil ||
		v.Secret != nil || v.ServiceAccount != nil || v.DownwardAPI != nil || v.DownwardMetrics != nil || v.Sysprep != nil
}

func volumeKind(v kubevirtv1.Volume) string {
	switch {
	case v.ContainerDisk != nil:
		return "containerDisk"
	case v.EmptyDisk != nil:
		return "emptyDisk"
	case v.HostDisk != nil:
		return "hostDisk"
	case v.Ephemeral != nil:
		return "ephemeral"
	default:
		return "unsupported"
	}
}
