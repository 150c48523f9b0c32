package main

import (
	"context"
	"fmt"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

// demoZone is the DRBD zone of dr-demo; each workload cluster holds the
// application namespace, a block StorageClass of the storage simulator and
// its VolumeSnapshotClass (a test failover snapshots the DR copies with the
// class of their driver), and the worked example's Multus network (example.go).
// The nodes are kwok's.
func demoZone() drNamespaceSpec {
	return drNamespaceSpec{
		namespace: drNamespace, zone: zoneName,
		displayName: "Sandbox", description: "two simulated sites on this machine",
		backend: srv1alpha1.BackendDRBD, storageClass: "standard",
		workload: func(cluster string) []client.Object {
			return append([]client.Object{ns(appNS),
				&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Provisioner: storagesim.Driver},
				&snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "standard-snapshots"}, Driver: storagesim.Driver,
					DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete}},
				shopNetworks(cluster)...)
		},
	}
}

// seedVMs creates the demo VMs and their disks on the primary. Every VM write
// of a protectable namespace passes pg-controller's webhook, which may take a
// moment after its start to serve with the CA it injected.
func (sb *sandbox) seedVMs(ctx context.Context) error {
	c := sb.zone.Clusters[primary].Client
	for i := range sb.o.vms {
		name := fmt.Sprintf("vm-%d", i+1)
		for _, obj := range []client.Object{blockPVC(name + "-rootdisk"), demoVM(name)} {
			err := poll(ctx, time.Minute, func() (bool, error) {
				err := c.Create(ctx, obj.DeepCopyObject().(client.Object))
				return err == nil || apierrors.IsAlreadyExists(err), nil
			})
			if err != nil {
				return fmt.Errorf("creating %T %s on %s: %w", obj, obj.GetName(), primary, err)
			}
		}
	}
	return nil
}

func ns(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func blockPVC(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
			StorageClassName: ptr.To("standard"),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

func demoVM(name string) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: name},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Disks: []kubevirtv1.Disk{{Name: "rootdisk"}}}},
				Volumes: []kubevirtv1.Volume{{Name: "rootdisk", VolumeSource: kubevirtv1.VolumeSource{
					PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
						PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-rootdisk"}}}}},
			}},
		},
	}
}
