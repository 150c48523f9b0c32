package vmdisks

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

func pvcVolume(name, claim string, hotplug bool) kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{
		PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: hotplug,
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
}

func vm(vols ...kubevirtv1.Volume) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db"},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: vols}}}}
}

func TestDisks(t *testing.T) {
	cloudInit := kubevirtv1.Volume{Name: "init", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{}}}
	dv := kubevirtv1.Volume{Name: "data", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "db-data"}}}
	container := kubevirtv1.Volume{Name: "boot", VolumeSource: kubevirtv1.VolumeSource{ContainerDisk: &kubevirtv1.ContainerDiskSource{}}}
	noTemplate := vm()
	noTemplate.Spec.Template = nil
	for _, c := range []struct {
		name   string
		vm     *kubevirtv1.VirtualMachine
		want   []Disk
		reason string
		msg    string
	}{
		{name: "PVC and DataVolume in order, config skipped", vm: vm(pvcVolume("root", "db-root", false), cloudInit, dv),
			want: []Disk{{Name: "root", Claim: "db-root"}, {Name: "data", Claim: "db-data"}}},
		{name: "no template", vm: noTemplate, reason: ReasonUnsupportedVolume, msg: "VirtualMachine apps/db has no template and so no disks to replicate"},
		{name: "only configuration", vm: vm(cloudInit), reason: ReasonUnsupportedVolume, msg: "VirtualMachine apps/db has no PersistentVolumeClaim or DataVolume disk to replicate"},
		{name: "containerDisk", vm: vm(container), reason: ReasonUnsupportedVolume, msg: `disk "boot" is a containerDisk volume; only PersistentVolumeClaim and DataVolume disks can be replicated`},
		{name: "hot-plugged", vm: vm(pvcVolume("root", "db-root", false), pvcVolume("extra", "x", true)), reason: ReasonUnsupportedVolume,
			msg: `disk "extra" of VirtualMachine apps/db is hot-plugged; hot-plugged volumes cannot be replicated: unplug it or make it a regular disk first`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Disks(c.vm)
			if c.reason == "" {
				require.NoError(t, err)
				require.Equal(t, c.want, got)
				return
			}
			var p *Problem
			require.True(t, errors.As(err, &p), "a Problem: %v", err)
			require.Equal(t, c.reason, p.Reason)
			require.Contains(t, p.Message, c.msg)
		})
	}
}

func TestCheckClaim(t *testing.T) {
	z := &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Name: "production"},
		Spec: srv1alpha1.ProtectionZoneSpec{StorageMappings: []srv1alpha1.StorageMapping{{SourceStorageClass: "standard", TargetStorageClass: "dr"}}}}
	pvc := func(phase corev1.PersistentVolumeClaimPhase, mode corev1.PersistentVolumeMode, class string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: ptr.To(mode), StorageClassName: ptr.To(class)},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	d := Disk{Name: "root", Claim: "db-root"}
	require.NoError(t, CheckClaim(d, pvc(corev1.ClaimBound, corev1.PersistentVolumeBlock, "standard"), z))
	for _, c := range []struct {
		pvc    *corev1.PersistentVolumeClaim
		reason string
		msg    string
	}{
		{pvc(corev1.ClaimPending, corev1.PersistentVolumeBlock, "standard"), ReasonPVCNotBound, `disk "root": PVC db-root is Pending, not Bound; protect the VM once its PVC is Bound`},
		{pvc("", corev1.PersistentVolumeBlock, "standard"), ReasonPVCNotBound, "is Pending, not Bound"},
		{pvc(corev1.ClaimBound, corev1.PersistentVolumeFilesystem, "standard"), ReasonVolumeModeNotBlock, "has volumeMode Filesystem; DRBD replicates block devices"},
		{pvc(corev1.ClaimBound, corev1.PersistentVolumeBlock, "fast"), ReasonNoStorageMapping, `PVC db-root uses StorageClass "fast", which has no entry in ProtectionZone production spec.storageMappings`},
	} {
		var p *Problem
		require.True(t, errors.As(CheckClaim(d, c.pvc, z), &p))
		require.Equal(t, c.reason, p.Reason)
		require.Contains(t, p.Message, c.msg)
	}
	var p *Problem
	require.True(t, errors.As(ClaimNotFound(d, "apps", "primary-cluster"), &p))
	require.Equal(t, ReasonPVCNotFound, p.Reason)
	require.Equal(t, `disk "root": PVC apps/db-root does not exist on primary-cluster`, p.Message)
}
