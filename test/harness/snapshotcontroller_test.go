package harness_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/sim/blockstore"
	snapshotsim "github.com/siterecovery/siterecovery/test/sim/snapshot"
)

const (
	testDriver   = "csi.harness.test"
	snapTimeout  = time.Minute
	volumeSize   = "3Gi"
	volumeBytes  = 3 << 30
	contentFinal = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"
)

// TestSnapshotController runs the real snapshot-controller with the snapshot
// simulator as the CSI driver: the controller makes and binds the contents,
// the simulator cuts the snapshots, and readiness and size travel back to the
// VolumeSnapshot, for a single snapshot, a restore from it, a group snapshot,
// and their deletion.
func TestSnapshotController(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, snapshotv1.AddToScheme(s))
	require.NoError(t, groupsnapshotv1.AddToScheme(s))
	z := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: s}, harness.Primary)
	c := z.Clusters[harness.Primary]
	ctx := t.Context()
	require.NoError(t, c.StartSnapshotController(ctx))
	data := blockstore.New(4096, 16)
	startDriver(t, c, s, data)

	cl := c.Client
	require.NoError(t, cl.Create(ctx, &snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "sim"},
		Driver: testDriver, DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete}))
	require.NoError(t, cl.Create(ctx, &groupsnapshotv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "sim"},
		Driver: testDriver, DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete}))

	t.Run("a snapshot is bound to the content the driver made ready", func(t *testing.T) {
		boundClaim(t, cl, "disk", "pv-disk", nil)
		data.Fill("pv-disk", 7)
		vs := &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "disk-snap"},
			Spec: snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("disk")},
				VolumeSnapshotClassName: ptr.To("sim")}}
		require.NoError(t, cl.Create(ctx, vs))
		eventually(t, "the snapshot ready", func() error { return snapshotReady(ctx, cl, vs) })
		require.Equal(t, int64(volumeBytes), vs.Status.RestoreSize.Value(), "the volume's size, as the driver reported it")

		content := &snapshotv1.VolumeSnapshotContent{}
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Name: *vs.Status.BoundVolumeSnapshotContentName}, content))
		require.Equal(t, vs.UID, content.Spec.VolumeSnapshotRef.UID, "bound by the snapshot-controller")
		require.Equal(t, "vol-pv-disk", ptr.Deref(content.Spec.Source.VolumeHandle, ""), "made from the claim's volume")
		require.Equal(t, testDriver, content.Spec.Driver, "the class's driver")
		require.Contains(t, content.Finalizers, contentFinal, "the snapshot-controller's finalizer")
		handle := ptr.Deref(content.Status.SnapshotHandle, "")
		require.Equal(t, data.Checksum("pv-disk"), data.Checksum(handle), "the driver copied the volume's blocks")

		t.Run("a claim restored from it is bound with its data", func(t *testing.T) {
			pvc := claim("restored", "")
			pvc.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: vs.Name}
			require.NoError(t, cl.Create(ctx, pvc))
			eventually(t, "the restored claim bound", func() error {
				if err := cl.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
					return err
				}
				if pvc.Status.Phase != corev1.ClaimBound {
					return fmt.Errorf("phase %q", pvc.Status.Phase)
				}
				return nil
			})
			require.Equal(t, data.Checksum(handle), data.Checksum(pvc.Spec.VolumeName))
		})

		t.Run("deleting it deletes its content and the storage snapshot", func(t *testing.T) {
			require.NoError(t, cl.Delete(ctx, vs))
			eventually(t, "the snapshot and its content gone", func() error {
				return errors.Join(gone(ctx, cl, vs), gone(ctx, cl, content))
			})
			require.False(t, data.Exists(handle), "the driver deleted the snapshot")
		})
	})

	t.Run("a group snapshot's members become ready", func(t *testing.T) {
		labels := map[string]string{"app": "db"}
		boundClaim(t, cl, "db-data", "pv-db-data", labels)
		boundClaim(t, cl, "db-log", "pv-db-log", labels)
		vgs := &groupsnapshotv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
			Spec: groupsnapshotv1.VolumeGroupSnapshotSpec{VolumeGroupSnapshotClassName: ptr.To("sim"),
				Source: groupsnapshotv1.VolumeGroupSnapshotSource{Selector: &metav1.LabelSelector{MatchLabels: labels}}}}
		require.NoError(t, cl.Create(ctx, vgs))
		var members []snapshotv1.VolumeSnapshot
		eventually(t, "the group and both members ready", func() error {
			if err := cl.Get(ctx, client.ObjectKeyFromObject(vgs), vgs); err != nil {
				return err
			}
			if vgs.Status == nil || !ptr.Deref(vgs.Status.ReadyToUse, false) {
				return fmt.Errorf("group status %+v", vgs.Status)
			}
			list := &snapshotv1.VolumeSnapshotList{}
			if err := cl.List(ctx, list, client.InNamespace("default")); err != nil {
				return err
			}
			members = nil
			for _, m := range list.Items {
				if m.Status != nil && ptr.Deref(m.Status.VolumeGroupSnapshotName, "") == vgs.Name {
					if !ptr.Deref(m.Status.ReadyToUse, false) || m.Status.RestoreSize == nil {
						return fmt.Errorf("member %s: %+v", m.Name, m.Status)
					}
					members = append(members, m)
				}
			}
			if len(members) != 2 {
				return fmt.Errorf("%d members", len(members))
			}
			return nil
		})
		for _, m := range members {
			require.Equal(t, int64(volumeBytes), m.Status.RestoreSize.Value())
		}

		require.NoError(t, cl.Delete(ctx, vgs))
		eventually(t, "the group, its content and its members gone", func() error {
			errs := []error{gone(ctx, cl, vgs)}
			for i := range members {
				errs = append(errs, gone(ctx, cl, &members[i]))
			}
			contents := &groupsnapshotv1.VolumeGroupSnapshotContentList{}
			if err := cl.List(ctx, contents); err != nil {
				return err
			}
			if n := len(contents.Items); n > 0 {
				errs = append(errs, fmt.Errorf("%d group contents left", n))
			}
			return errors.Join(errs...)
		})
	})
}

// startDriver runs the snapshot simulator, the driver's part, against c until
// the test ends.
func startDriver(t *testing.T, c *harness.Cluster, s *runtime.Scheme, data *blockstore.Store) {
	t.Helper()
	mgr, err := ctrl.NewManager(c.Config, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	require.NoError(t, err)
	require.NoError(t, snapshotsim.SetupWithManager(mgr, snapshotsim.Options{Driver: testDriver, Data: data}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

func claim(name, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(""), VolumeName: volume,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(volumeSize)}}}}
}

// boundClaim creates a claim bound to a CSI volume of the test driver, as a
// PV controller would leave it (the bare API server runs none).
func boundClaim(t *testing.T, cl client.Client, name, pvName string, labels map[string]string) {
	t.Helper()
	ctx := t.Context()
	pvc := claim(name, pvName)
	pvc.Labels = labels
	require.NoError(t, cl.Create(ctx, pvc))
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(volumeSize)},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: name, UID: pvc.UID},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: testDriver, VolumeHandle: "vol-" + pvName}}}}
	require.NoError(t, cl.Create(ctx, pv))
	pv.Status.Phase = corev1.VolumeBound
	require.NoError(t, cl.Status().Update(ctx, pv))
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.Capacity = pv.Spec.Capacity
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	require.NoError(t, cl.Status().Update(ctx, pvc))
}

func snapshotReady(ctx context.Context, cl client.Client, vs *snapshotv1.VolumeSnapshot) error {
	if err := cl.Get(ctx, client.ObjectKeyFromObject(vs), vs); err != nil {
		return err
	}
	if vs.Status == nil || !ptr.Deref(vs.Status.ReadyToUse, false) || vs.Status.RestoreSize == nil || vs.Status.BoundVolumeSnapshotContentName == nil {
		return fmt.Errorf("status %+v", vs.Status)
	}
	return nil
}

func gone(ctx context.Context, cl client.Client, obj client.Object) error {
	err := cl.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%T %s still there (finalizers %v)", obj, obj.GetName(), obj.GetFinalizers())
}

// eventually polls cond until it returns nil, failing the test with cond's
// last error after snapTimeout.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.After(snapTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("%s: not within %s: %v", what, snapTimeout, err)
		case <-tick.C:
		}
	}
}
