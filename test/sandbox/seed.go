package main

import (
	"context"
	"fmt"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

// seed creates what an operator would have before protecting anything: the DR
// namespace and kubeconfig Secrets, the zone, a block StorageClass per
// workload cluster, and the demo VMs on the primary. The nodes are kwok's.
func (sb *sandbox) seed(ctx context.Context) error {
	objs := map[string][]client.Object{"quorum": {ns(drNamespace)}}
	for _, cluster := range []string{primary, dr} {
		// The peer-auth namespace is the workload chart's (drbd-peer-auth.yaml).
		objs[cluster] = append(objs[cluster], ns(drNamespace), ns(srv1alpha1.PeerAuthNamespace(drNamespace)), ns(appNS),
			&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Provisioner: storagesim.Driver},
			// A test failover snapshots the DR copies with the class of their driver.
			&snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "standard-snapshots"}, Driver: storagesim.Driver,
				DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete})
		kc, err := sb.quorumKubeconfig(cluster)
		if err != nil {
			return err
		}
		objs["quorum"] = append(objs["quorum"], &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: cluster + "-kubeconfig"},
			Data:       map[string][]byte{srv1alpha1.KubeconfigSecretKey: kc},
		})
	}
	objs["quorum"] = append(objs["quorum"], &srv1alpha1.ProtectionZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: zoneName},
		Spec: srv1alpha1.ProtectionZoneSpec{
			DisplayName: "Sandbox", Description: "two simulated sites on this machine",
			StorageBackend: srv1alpha1.BackendDRBD,
			Clusters: []srv1alpha1.ZoneCluster{
				{Name: primary, Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: primary + "-kubeconfig"}, Client: srv1alpha1.ClientSettings{TimeoutSeconds: 3}},
				{Name: dr, Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: dr + "-kubeconfig"}, Client: srv1alpha1.ClientSettings{TimeoutSeconds: 3}},
			},
			StorageMappings: []srv1alpha1.StorageMapping{{SourceStorageClass: "standard", TargetStorageClass: "standard"}},
		},
	})
	for i := range sb.o.vms {
		name := fmt.Sprintf("vm-%d", i+1)
		objs[primary] = append(objs[primary], blockPVC(name+"-rootdisk"), demoVM(name))
	}
	for _, cluster := range []string{"quorum", primary, dr} {
		c := sb.zone.Clusters[cluster].Client
		for _, obj := range objs[cluster] {
			if err := c.Create(ctx, obj); err != nil {
				return fmt.Errorf("creating %T %s on %s: %w", obj, obj.GetName(), cluster, err)
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
