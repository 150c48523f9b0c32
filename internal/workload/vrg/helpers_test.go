package vrg_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/internal/workload/vrg"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/sim/storagearray"
)

const (
	operatorNS = "ramen-system"
	wait       = 30 * time.Second
	// Classes: the storage array simulator reports no conditions for the first two
	// (as LUN-level arrays with schedulingInterval 0m) and all conditions for the third.
	classNoConditions   = "offloaded-vgrc"
	classNoConditions2  = "offloaded-vgrc-2"
	classNoConditions5m = "offloaded-vgrc-5m-quiet"
	classConditions     = "offloaded-vgrc-5m"
)

// startCluster runs one workload cluster with the VRG controller and two storage
// array simulators, and returns a client to it.
func startCluster(t *testing.T) client.Client {
	t.Helper()
	log.SetLogger(zap.New(zap.WriteTo(t.Output()), zap.UseDevMode(false)))
	s := scheme.New()
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: s}, harness.Primary)
	cluster := zone.Clusters[harness.Primary]
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"},
		// Each test starts its own manager in this one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	require.NoError(t, err)
	require.NoError(t, vrg.SetupWithManager(mgr, vrg.Options{OperatorNamespace: operatorNS}))
	require.NoError(t, storagearray.SetupWithManager(mgr, storagearray.Options{
		Name: "array-quiet", Delay: 200 * time.Millisecond, Classes: []string{classNoConditions, classNoConditions5m, classNoConditions2},
	}))
	require.NoError(t, storagearray.SetupWithManager(mgr, storagearray.Options{
		Name: "array-conditions", Delay: 200 * time.Millisecond, Conditions: true, Classes: []string{classConditions},
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	c := cluster.Client
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}}))
	return c
}

// storage creates a StorageClass (offloaded, with a storage ID) and a
// VolumeGroupReplicationClass (global, of replication group grID).
func storage(t *testing.T, c client.Client, sc, storageID, vgrc, grID, interval string) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: sc, Labels: map[string]string{drv1alpha1.OffloadedLabel: "true", drv1alpha1.StorageIDLabel: storageID}},
		Provisioner: "array.example.com",
	}))
	require.NoError(t, c.Create(ctx, &replicationv1alpha1.VolumeGroupReplicationClass{
		ObjectMeta: metav1.ObjectMeta{Name: vgrc, Labels: map[string]string{
			drv1alpha1.GroupReplicationIDLabel: grID, drv1alpha1.GlobalLabel: "true", drv1alpha1.StorageIDLabel: storageID,
		}},
		Spec: replicationv1alpha1.VolumeGroupReplicationClassSpec{
			Provisioner: "array.example.com",
			Parameters:  map[string]string{"schedulingInterval": interval},
		},
	}))
}

func peerClass(sc, storageID, grID string) drv1alpha1.PeerClass {
	return drv1alpha1.PeerClass{
		ClusterIDs: []string{"cl-1", "cl-2"}, StorageClassName: sc, StorageID: []string{storageID, storageID + "-peer"},
		GroupReplicationID: grID, Grouping: true, Offloaded: true, Global: true,
	}
}

func namespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	require.NoError(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
}

func newPVC(ns, name, app, sc string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(sc),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

func newVRG(ns, name, app string, state drv1alpha1.ReplicationState, interval string, classes ...drv1alpha1.PeerClass) *drv1alpha1.VolumeReplicationGroup {
	return &drv1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: drv1alpha1.VolumeReplicationGroupSpec{
			PVCSelector:      metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			ReplicationState: state,
			Async:            &drv1alpha1.VRGAsyncSpec{SchedulingInterval: interval, PeerClasses: classes},
		},
	}
}

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(wait)
	var last error
	for time.Now().Before(deadline) {
		if last = cond(); last == nil {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s: %v", what, last)
}

// consistently fails if cond ever fails during d.
func consistently(t *testing.T, what string, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := cond(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func getVRG(t *testing.T, c client.Client, ns, name string) *drv1alpha1.VolumeReplicationGroup {
	t.Helper()
	v := &drv1alpha1.VolumeReplicationGroup{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, v))
	return v
}

// hasCondition checks one condition of a VRG (message "" matches any message).
func hasCondition(c client.Client, ns, name, condType string, status metav1.ConditionStatus, reason, message string) func() error {
	return func() error {
		v := &drv1alpha1.VolumeReplicationGroup{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, v); err != nil {
			return err
		}
		got := meta.FindStatusCondition(v.Status.Conditions, condType)
		if got == nil {
			return fmt.Errorf("%s/%s: no %s condition (conditions %+v)", ns, name, condType, v.Status.Conditions)
		}
		if got.Status != status || got.Reason != reason || (message != "" && got.Message != message) {
			return fmt.Errorf("%s/%s: %s is %s/%s %q, want %s/%s %q", ns, name, condType, got.Status, got.Reason, got.Message, status, reason, message)
		}
		return nil
	}
}

func hasState(c client.Client, ns, name string, want drv1alpha1.State) func() error {
	return func() error {
		v := &drv1alpha1.VolumeReplicationGroup{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, v); err != nil {
			return err
		}
		if v.Status.State != want {
			return fmt.Errorf("%s/%s: state %q, want %q", ns, name, v.Status.State, want)
		}
		return nil
	}
}

func getVGR(c client.Client, name string) (*replicationv1alpha1.VolumeGroupReplication, error) {
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: operatorNS, Name: name}, vgr)
	return vgr, err
}

func vgrState(c client.Client, name string, spec replicationv1alpha1.ReplicationState, state replicationv1alpha1.State) func() error {
	return func() error {
		vgr, err := getVGR(c, name)
		if err != nil {
			return err
		}
		if vgr.Spec.ReplicationState != spec || vgr.Status.State != state {
			return fmt.Errorf("VGR %s: spec %q status %q, want %q %q", name, vgr.Spec.ReplicationState, vgr.Status.State, spec, state)
		}
		return nil
	}
}

func setState(t *testing.T, c client.Client, ns, name string, state drv1alpha1.ReplicationState, action drv1alpha1.DRAction) {
	t.Helper()
	v := getVRG(t, c, ns, name)
	before := v.DeepCopy()
	v.Spec.ReplicationState, v.Spec.Action = state, action
	require.NoError(t, c.Patch(t.Context(), v, client.MergeFrom(before)))
}
