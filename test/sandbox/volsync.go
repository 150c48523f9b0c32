package main

import (
	"context"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/sim/blockstore"
	"github.com/siterecovery/siterecovery/test/sim/mover"
	snapshotsim "github.com/siterecovery/siterecovery/test/sim/snapshot"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

// Names of the VolSync zone (-volsync): a second DR namespace, run by its own
// quorum-manager, over the same two workload clusters.
const (
	vsNamespace = "dr-volsync"
	vsZoneName  = "demo-volsync"
	vsPolicy    = "volsync-1m"
	vsAppNS     = "volsync-apps"
	vsGroup     = "vs-group"
	vsClass     = "cephfs"
	// The storage simulator's driver: the snapshot-controller takes group
	// snapshots only of volumes of the class's driver.
	vsProvisioner = storagesim.Driver
	vsSnapClass   = "cephfs-vgsc"
	// Simulated volumes of 1 GiB in 1 MiB blocks: the mover counts the
	// blocks it sends, so full and diff syncs differ visibly.
	vsBlockSize = 1 << 20
	vsBlocks    = 1024
)

// vsSnapshotClasses label the zone's snapshot classes, which its DRPolicy
// selects: the ProtectionZone webhook refuses a VolSync zone whose policy
// selects none.
var vsSnapshotClasses = map[string]string{"siterecovery.trilio.io/volsync": "true"}

// volsyncSims are the VolSync zone's simulators, shared by both workload
// clusters: the volumes' blocks and the mover between them.
type volsyncSims struct {
	data  *blockstore.Store
	mover *mover.Mover
}

func newVolsyncSims() *volsyncSims {
	d := blockstore.New(vsBlockSize, vsBlocks)
	return &volsyncSims{data: d, mover: mover.New(d)}
}

// setupVolSyncSims registers the snapshot (the CSI driver's part) and
// VolSync mover simulators with a workload cluster's simulator manager; the
// cluster's snapshot-controller runs already (startSimulators).
func (sb *sandbox) setupVolSyncSims(mgr ctrl.Manager, cluster string) error {
	if err := snapshotsim.SetupWithManager(mgr, snapshotsim.Options{Data: sb.vs.data, Driver: vsProvisioner}); err != nil {
		return err
	}
	return sb.vs.mover.SetupWithManager(mgr, cluster)
}

// volsyncZone is the VolSync zone's DR namespace; each workload cluster
// gets the application namespace, StorageClass and snapshot classes of the
// simulated CSI driver.
func volsyncZone() drNamespaceSpec {
	return drNamespaceSpec{
		namespace: vsNamespace, zone: vsZoneName,
		displayName: "Sandbox (VolSync)", description: "the same two sites, replicated by VolSync snapshots",
		backend: srv1alpha1.BackendVolSync, storageClass: vsClass, policy: vsPolicy, interval: "1m", snapshotClasses: vsSnapshotClasses,
		workload: func(string) []client.Object {
			return []client.Object{ns(vsAppNS),
				&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: vsClass}, Provisioner: vsProvisioner},
				&groupsnapshotv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: vsSnapClass, Labels: vsSnapshotClasses},
					Driver: vsProvisioner, DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete},
				// The driver's default class: the mover snapshots its
				// destinations without naming one, as VolSync does.
				&snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: vsSnapClass, Labels: vsSnapshotClasses,
					Annotations: map[string]string{"snapshot.storage.kubernetes.io/is-default-class": "true"}},
					Driver: vsProvisioner, DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete}}
		},
	}
}

func vsPVCName() string { return vsGroup + "-disk" }
func vsVMName() string  { return vsGroup + "-vm" }

// protectVolSync creates the VolSync group's VM and its disk on the primary
// (the VM halted on the DR cluster, where it will start), fills the disk,
// and protects it with a ProtectionGroup and a DRPC in diff mode; it waits
// for the first, full, sync.
func (sb *sandbox) protectVolSync(ctx context.Context) error {
	P, D := sb.zone.Clusters[primary].Client, sb.zone.Clusters[dr].Client
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: vsAppNS, Name: vsPVCName(), Labels: map[string]string{"app": vsGroup}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(vsClass),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := P.Create(ctx, pvc); err != nil {
		return err
	}
	if err := P.Create(ctx, vsVM(kubevirtv1.RunStrategyAlways)); err != nil {
		return err
	}
	if err := D.Create(ctx, vsVM(kubevirtv1.RunStrategyHalted)); err != nil {
		return err
	}
	vol, err := sb.vsVolume(ctx, primary)
	if err != nil {
		return err
	}
	sb.vs.data.Fill(vol, 1)
	q := sb.zone.Clusters["quorum"].Client
	if err := q.Create(ctx, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: vsNamespace, Name: vsGroup},
		Spec: srv1alpha1.ProtectionGroupSpec{
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: vsAppNS, Name: vsVMName()}},
			ActiveCluster:   primary, ZoneRef: &srv1alpha1.LocalObjectReference{Name: vsZoneName},
			Replication: srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: 180}}}); err != nil {
		return err
	}
	if err := q.Create(ctx, &drv1alpha1.DRPlacementControl{
		// Diff mode: each cycle sends only the blocks changed since the last.
		ObjectMeta: metav1.ObjectMeta{Namespace: vsNamespace, Name: vsGroup, Annotations: map[string]string{drv1alpha1.EnableDiffAnnotation: "true"}},
		Spec: drv1alpha1.DRPlacementControlSpec{
			ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: vsGroup},
			DRPolicyRef:        srv1alpha1.LocalObjectReference{Name: vsPolicy},
			PVCSelector:        metav1.LabelSelector{MatchLabels: map[string]string{"app": vsGroup}},
			PreferredCluster:   primary,
		}}); err != nil {
		return err
	}
	say("%s: DRPC %s/%s created (enable-diff \"true\", every 1m); waiting for the first sync", vsGroup, vsNamespace, vsGroup)
	go sb.printTransfers(ctx)
	return sb.vsWaitProtected(ctx, primary, nil)
}

func vsVM(s kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	disk := kubevirtv1.Volume{Name: "data", VolumeSource: kubevirtv1.VolumeSource{
		PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: vsPVCName()}}}}
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: vsAppNS, Name: vsVMName(), Labels: map[string]string{"app": vsGroup}},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(s), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{disk}}}},
	}
}
