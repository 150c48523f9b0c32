package env

import (
	"context"
	"fmt"
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	wsetup "github.com/siterecovery/siterecovery/internal/workload/setup"
	"github.com/siterecovery/siterecovery/internal/workload/vrg"
	"github.com/siterecovery/siterecovery/test/sim/storagearray"
)

// OffloadedStorage makes StartWorkload run the workload tier of an Offloaded
// zone: pg-controller as the product wires it (wsetup.PGController, so the real
// VolumeReplicationGroup reconciler runs beside the ProtectionGroup one) and a
// storage array simulator behind the VolumeGroupReplications.
type OffloadedStorage struct {
	// OperatorNamespace holds the global VGRs; vrg.DefaultOperatorNamespace when
	// empty. StartWorkload creates it, as the chart does.
	OperatorNamespace string
	// ArrayDelay is how long the simulated array takes to reach a new state.
	ArrayDelay time.Duration
	// Sync, when set, makes the array replicate in cycles (storagearray.Sync)
	// and report its conditions, as an array with a schedulingInterval does.
	Sync *storagearray.Sync
}

// registerOffloaded is StartWorkload's registration for o.Offloaded.
func (e *Env) registerOffloaded(cluster string, mgr ctrl.Manager, o WorkloadOptions) error {
	ns := o.Offloaded.OperatorNamespace
	if ns == "" {
		ns = vrg.DefaultOperatorNamespace
	}
	// A restarted pg-controller finds the namespace from its first start.
	err := e.Client(cluster).Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return wsetup.PGController(wsetup.PGOptions{OperatorNamespace: ns})(mgr, wsetup.Options{})
}

// GlobalStorage is one cluster's storage of a global replication group:
// an offloaded StorageClass with a StorageID, and a global
// VolumeGroupReplicationClass of that StorageID and GroupReplicationID.
type GlobalStorage struct {
	StorageClass, ReplicationClass, StorageID, GroupReplicationID string
	// SchedulingInterval is the class's parameter; "0m" when empty.
	SchedulingInterval string
}

// CreateGlobalStorage creates the StorageClass and VolumeGroupReplicationClass
// of s on a workload cluster.
func (e *Env) CreateGlobalStorage(t testing.TB, cluster string, s GlobalStorage) {
	t.Helper()
	if s.SchedulingInterval == "" {
		s.SchedulingInterval = "0m"
	}
	const provisioner = "array.csi.example.com"
	create(t, e.Client(cluster), &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: s.StorageClass, Labels: map[string]string{
			drv1alpha1.OffloadedLabel: "true", drv1alpha1.StorageIDLabel: s.StorageID}},
		Provisioner: provisioner,
	})
	create(t, e.Client(cluster), &replicationv1alpha1.VolumeGroupReplicationClass{
		ObjectMeta: metav1.ObjectMeta{Name: s.ReplicationClass, Labels: map[string]string{
			drv1alpha1.StorageIDLabel: s.StorageID, drv1alpha1.GroupReplicationIDLabel: s.GroupReplicationID, drv1alpha1.GlobalLabel: "true"}},
		Spec: replicationv1alpha1.VolumeGroupReplicationClassSpec{Provisioner: provisioner,
			Parameters: map[string]string{"schedulingInterval": s.SchedulingInterval}},
	})
}

// AppPVCName is the PVC of an application's VM.
func AppPVCName(app string) string { return app + "-pvc" }

// AppVMName is the VM of an application.
func AppVMName(app string) string { return app + "-vm" }

// CreateAppPVC creates an application's PVC in AppNS, labelled app=<app> for
// the VRG's pvcSelector. The VRG controller does not need it bound. On the
// cluster the application is not active it stands for the array's replica
// (pg-sync's standby VMs name the same claim).
func (e *Env) CreateAppPVC(t testing.TB, cluster, app, storageClass string) {
	t.Helper()
	create(t, e.Client(cluster), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: AppNS, Name: AppPVCName(app), Labels: map[string]string{"app": app}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(storageClass),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	})
}

// AppVM is an application's VM with its PVC as disk, so that the simulated
// VMI mounts the PVC and the VRG's secondary gating sees it in use.
func AppVM(app string, s kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	disk := kubevirtv1.Volume{Name: "data", VolumeSource: kubevirtv1.VolumeSource{
		PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: AppPVCName(app)}}}}
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: AppNS, Name: AppVMName(app), Labels: map[string]string{"app": app}},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(s), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{disk}}}},
	}
}

// OffloadedZone is what StartOffloaded sets up.
type OffloadedZone struct {
	// ArrayDelay is the storage array simulator's delay.
	ArrayDelay time.Duration
	// StorageClass and ReplicationClass name the global classes created on both
	// clusters, with storage IDs sid-1 and sid-2, for GroupReplicationID.
	StorageClass, ReplicationClass, GroupReplicationID string
	// Policy names the DRPolicy over both clusters.
	Policy string
	// SchedulingInterval is the policy's and the classes' interval; "0m"
	// (the storage replicates on its own) when empty.
	SchedulingInterval string
	// Sync, when set, makes the arrays of both clusters replicate in cycles
	// over one link (storagearray.Sync).
	Sync *storagearray.Sync
	// VMStartDelay and VMStopDelay are the KubeVirt simulator's delays.
	VMStartDelay, VMStopDelay time.Duration
	// Processes, when set, starts the workload tier and quorum-manager, so
	// that a test can kill and restart them as they first ran.
	Processes *Processes
	// Clock, when set, is quorum-manager's (setup.QuorumOptions.Clock).
	Clock clock.PassiveClock
}

// StartOffloaded runs, on a zone created with the Offloaded backend, the
// workload tier with the VRG controller and array simulator on both clusters
// and their global storage classes, the safety recorder, quorum-manager and
// the DRPolicy. It returns the safety recorder and quorum-manager.
func (e *Env) StartOffloaded(t testing.TB, o OffloadedZone) (*Safety, *Process) {
	t.Helper()
	procs := o.Processes
	if procs == nil {
		procs = e.NewProcesses()
	}
	for i, c := range []string{Primary, DR} {
		procs.StartWorkload(t, c, WorkloadOptions{VMStartDelay: o.VMStartDelay, VMStopDelay: o.VMStopDelay,
			Offloaded: &OffloadedStorage{ArrayDelay: o.ArrayDelay, Sync: o.Sync}})
		e.CreateGlobalStorage(t, c, GlobalStorage{StorageClass: o.StorageClass, ReplicationClass: o.ReplicationClass,
			StorageID: fmt.Sprintf("sid-%d", i+1), GroupReplicationID: o.GroupReplicationID, SchedulingInterval: o.SchedulingInterval})
	}
	safety := e.WatchSafety(t)
	quorum := procs.StartQuorum(t, setup.QuorumOptions{ProbeInterval: time.Second, Clock: o.Clock})
	interval := o.SchedulingInterval
	if interval == "" {
		interval = "0m"
	}
	create(t, e.Client(Quorum), &drv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: o.Policy},
		Spec: drv1alpha1.DRPolicySpec{DRClusters: []string{Primary, DR}, SchedulingInterval: interval}})
	return safety, quorum
}
