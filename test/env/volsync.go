package env

import (
	"context"
	"fmt"
	"testing"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	wsetup "github.com/siterecovery/siterecovery/internal/workload/setup"
	"github.com/siterecovery/siterecovery/test/sim/blockstore"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
	"github.com/siterecovery/siterecovery/test/sim/mover"
	snapshotsim "github.com/siterecovery/siterecovery/test/sim/snapshot"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

// VolSyncStorage makes StartWorkload run the workload tier of a VolSync zone:
// pg-controller as the product wires it (the VRG, ReplicationGroupSource and
// ReplicationGroupDestination reconcilers beside the ProtectionGroup one), the
// KubeVirt simulator, and the snapshot, storage and VolSync mover simulators,
// which keep every volume's blocks in Data and move them between the clusters.
// It always runs as cluster admin, whatever ChartRBACEnv says.
type VolSyncStorage struct {
	Data  *blockstore.Store
	Mover *mover.Mover
	// Driver is the CSI driver the snapshot simulator serves: the zone's
	// provisioner, the driver of its snapshot classes.
	Driver string
}

// registerVolSync is StartWorkload's registration for o.VolSync.
func (e *Env) registerVolSync(cluster string, mgr ctrl.Manager, o WorkloadOptions) error {
	if err := wsetup.PGController(wsetup.PGOptions{})(mgr, wsetup.Options{}); err != nil {
		return err
	}
	if err := kubevirtsim.SetupWithManager(mgr, e.KubeVirtOptions(cluster, o.VMStartDelay, o.VMStopDelay)); err != nil {
		return err
	}
	if err := snapshotsim.SetupWithManager(mgr, snapshotsim.Options{Data: o.VolSync.Data, Driver: o.VolSync.Driver}); err != nil {
		return err
	}
	// Restores are the snapshot simulator's: it copies the blocks.
	if err := storagesim.SetupWithManager(mgr, storagesim.Options{SkipRestores: true}); err != nil {
		return err
	}
	return o.VolSync.Mover.SetupWithManager(mgr, cluster)
}

// VolSyncZone is what StartVolSync sets up.
type VolSyncZone struct {
	// StorageClass and its Provisioner are created on both clusters, with a
	// VolumeGroupSnapshotClass GroupSnapshotClass of that driver. The
	// snapshot-controller takes group snapshots only of volumes of the
	// class's driver, so Provisioner must be the storage simulator's
	// (storagesim.Driver, the default).
	StorageClass, Provisioner, GroupSnapshotClass string
	// Policy names the DRPolicy over both clusters, of SchedulingInterval.
	Policy, SchedulingInterval string
	// BlockSize and Blocks size every simulated volume.
	BlockSize int64
	Blocks    int
}

// VolSyncFixture is a running VolSync zone's data and mover.
type VolSyncFixture struct {
	Data   *blockstore.Store
	Mover  *mover.Mover
	Quorum *Process
}

// StartVolSync runs, on a zone created with the VolSync backend, the
// snapshot-controller, the workload tier and simulators on both clusters with
// their storage and snapshot classes, quorum-manager, and the DRPolicy; it
// waits until the policy discovered the StorageClass as a VolSync peer class.
func (e *Env) StartVolSync(t testing.TB, o VolSyncZone) *VolSyncFixture {
	t.Helper()
	if o.Provisioner == "" {
		o.Provisioner = storagesim.Driver
	}
	f := &VolSyncFixture{Data: blockstore.New(o.BlockSize, o.Blocks)}
	f.Mover = mover.New(f.Data)
	for _, c := range []string{Primary, DR} {
		// A process of the cluster's, which outlives a restarted workload tier.
		require.NoError(t, e.Clusters[c].StartSnapshotController(t.Context()))
		e.StartWorkload(t, c, WorkloadOptions{VolSync: &VolSyncStorage{Data: f.Data, Mover: f.Mover, Driver: o.Provisioner}})
		create(t, e.Client(c), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: o.StorageClass}, Provisioner: o.Provisioner})
		create(t, e.Client(c), &groupsnapshotv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: o.GroupSnapshotClass},
			Driver: o.Provisioner, DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete})
		// The driver's default class: the mover snapshots its destinations
		// without naming one, as VolSync does.
		create(t, e.Client(c), &snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: o.GroupSnapshotClass,
			Annotations: map[string]string{"snapshot.storage.kubernetes.io/is-default-class": "true"}},
			Driver: o.Provisioner, DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete})
	}
	f.Quorum = e.StartQuorum(t, setup.QuorumOptions{ProbeInterval: time.Second})
	create(t, e.Client(Quorum), &drv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: o.Policy},
		Spec: drv1alpha1.DRPolicySpec{DRClusters: []string{Primary, DR}, SchedulingInterval: o.SchedulingInterval}})
	Eventually(t, 2*time.Minute, "VolSync peer class", func() error {
		p := &drv1alpha1.DRPolicy{}
		if err := e.Client(Quorum).Get(context.Background(), client.ObjectKey{Namespace: Namespace, Name: o.Policy}, p); err != nil {
			return err
		}
		if len(p.Status.PeerClasses) != 1 || p.Status.PeerClasses[0].StorageClassName != o.StorageClass {
			return fmt.Errorf("peerClasses %+v", p.Status.PeerClasses)
		}
		return nil
	})
	return f
}

// Volume is the data handle (the PV name) of a bound PVC; empty while unbound.
func (e *Env) Volume(t testing.TB, cluster, namespace, pvc string) string {
	t.Helper()
	p := &corev1.PersistentVolumeClaim{}
	if err := e.Client(cluster).Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: pvc}, p); err != nil {
		return ""
	}
	if p.Status.Phase != corev1.ClaimBound {
		return ""
	}
	return p.Spec.VolumeName
}
