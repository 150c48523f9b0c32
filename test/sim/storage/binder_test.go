package storage_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/siterecovery/siterecovery/test/harness"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

func TestMain(m *testing.M) {
	log.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	os.Exit(m.Run())
}

func claim(name, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(class), VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

// TestWaitForFirstConsumerBindsWhereTheSchedulerPlacedThePod runs the
// storage simulator beside kube-scheduler and kwok nodes: a claim of a
// WaitForFirstConsumer class stays unbound while a claim of an immediate
// class binds, and once a pod using it is scheduled it binds to a volume
// whose node affinity is the pod's node.
func TestWaitForFirstConsumerBindsWhereTheSchedulerPlacedThePod(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	z := harness.Start(t, harness.Options{Scheme: scheme, ControlPlane: true}, harness.Primary)
	cluster := z.Clusters[harness.Primary]
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	require.NoError(t, err)
	require.NoError(t, storagesim.SetupWithManager(mgr, storagesim.Options{}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	c := cluster.Client

	require.NoError(t, c.Create(t.Context(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: storagesim.Driver,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}))
	require.NoError(t, c.Create(t.Context(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "network"}, Provisioner: storagesim.Driver}))
	late, now := claim("late", "local"), claim("now", "network")
	require.NoError(t, c.Create(t.Context(), late))
	require.NoError(t, c.Create(t.Context(), now))
	bound := func(pvc *corev1.PersistentVolumeClaim) func() error {
		return func() error {
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(pvc), pvc); err != nil {
				return err
			}
			if pvc.Status.Phase != corev1.ClaimBound {
				return fmt.Errorf("claim %s is %q", pvc.Name, pvc.Status.Phase)
			}
			return nil
		}
	}
	poll(t, "the immediate claim bound", bound(now))
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(late), late))
	require.Empty(t, late.Spec.VolumeName, "a WaitForFirstConsumer claim waits for a pod")

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "consumer"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
			VolumeDevices: []corev1.VolumeDevice{{Name: "d", DevicePath: "/dev/d"}}}},
		Volumes: []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "late"}}}}}}
	require.NoError(t, c.Create(t.Context(), pod))
	poll(t, "the late claim bound after the pod was placed", bound(late))
	poll(t, "the pod scheduled", func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if pod.Spec.NodeName == "" {
			return fmt.Errorf("pod %s not scheduled", pod.Name)
		}
		return nil
	})
	require.Equal(t, pod.Spec.NodeName, late.Annotations["volume.kubernetes.io/selected-node"])
	pv := &corev1.PersistentVolume{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: late.Spec.VolumeName}, pv))
	require.Equal(t, []string{pod.Spec.NodeName}, pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values,
		"the volume attaches only where its first consumer runs")
}

func poll(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for err := cond(); err != nil; err = cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
