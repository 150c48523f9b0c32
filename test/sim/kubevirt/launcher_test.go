package kubevirt_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/siterecovery/siterecovery/test/harness"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
)

// TestVMIRunsInItsLauncherPod runs the simulator with launcher pods on a
// cluster with kube-scheduler and kwok nodes: a VMI runs on the node the
// scheduler gave its pod, a VM that fits nowhere shows ErrorUnschedulable
// with the scheduler's reason, and a stopped VM's VMI goes only after its pod.
func TestVMIRunsInItsLauncherPod(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, kubevirtv1.AddToScheme(scheme))
	z := harness.Start(t, harness.Options{Scheme: scheme, ControlPlane: true}, harness.Primary)
	cluster := z.Clusters[harness.Primary]
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	require.NoError(t, err)
	require.NoError(t, kubevirtsim.SetupWithManager(mgr, kubevirtsim.Options{LauncherPods: true}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	c := cluster.Client

	vm := newVM("web")
	vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
	vm.Spec.Template.Spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	// A Multus network listed before the pod network: KubeVirt still reports
	// the pod network's interface first.
	vm.Spec.Template.Spec.Networks = []kubevirtv1.Network{
		{Name: "storage", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "storage"}}},
		{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}}
	vm.Spec.Template.Spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{
		{Name: "storage", MacAddress: "02:00:00:00:00:0b", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}},
		{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}}}
	require.NoError(t, c.Create(t.Context(), vm))
	var pod corev1.Pod
	waitFor(t, "web's VMI running on its launcher pod's node", func() string {
		vmi := &kubevirtv1.VirtualMachineInstance{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(vm), vmi); err != nil {
			return err.Error()
		}
		pods := &corev1.PodList{}
		if err := c.List(t.Context(), pods, client.InNamespace("default"), client.MatchingLabels{"vm.kubevirt.io/name": "web"}); err != nil || len(pods.Items) != 1 {
			return fmt.Sprintf("launcher pods %d: %v", len(pods.Items), err)
		}
		pod = pods.Items[0]
		if vmi.Status.Phase != kubevirtv1.Running || vmi.Status.NodeName == "" || vmi.Status.NodeName != pod.Spec.NodeName {
			return fmt.Sprintf("VMI %s on %q, pod on %q", vmi.Status.Phase, vmi.Status.NodeName, pod.Spec.NodeName)
		}
		return ""
	})
	require.Equal(t, "web", pod.Labels["app"], "labels of the VM template reach the pod")
	vmi := &kubevirtv1.VirtualMachineInstance{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(vm), vmi))
	require.NotEmpty(t, pod.Status.PodIP)
	require.Equal(t, []kubevirtv1.VirtualMachineInstanceNetworkInterface{
		{Name: "default", IP: pod.Status.PodIP, IPs: []string{pod.Status.PodIP}, PodInterfaceName: "eth0"},
		{Name: "storage", MAC: "02:00:00:00:00:0b"},
	}, vmi.Status.Interfaces, "the pod network's interface first, with the launcher pod's address")
	require.Equal(t, "4352Mi", pod.Spec.Containers[0].Resources.Requests.Memory().String(), "the guest's memory and the launcher's overhead")

	big := newVM("big")
	big.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
	big.Spec.Template.Spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Gi")}
	require.NoError(t, c.Create(t.Context(), big))
	waitFor(t, "big unschedulable", func() string {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(big), big); err != nil {
			return err.Error()
		}
		if big.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusUnschedulable {
			return string(big.Status.PrintableStatus)
		}
		for _, cond := range big.Status.Conditions {
			if string(cond.Type) == string(corev1.PodScheduled) && cond.Reason == corev1.PodReasonUnschedulable {
				require.Contains(t, cond.Message, "Insufficient memory")
				return ""
			}
		}
		return fmt.Sprintf("conditions %v", big.Status.Conditions)
	})

	vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(vm), vm))
	vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
	require.NoError(t, c.Update(t.Context(), vm))
	deadline := time.Now().Add(waitLimit)
	for {
		vmiErr := c.Get(t.Context(), client.ObjectKeyFromObject(vm), &kubevirtv1.VirtualMachineInstance{})
		podErr := c.Get(t.Context(), client.ObjectKeyFromObject(&pod), &corev1.Pod{})
		require.False(t, apierrors.IsNotFound(vmiErr) && podErr == nil, "the VMI went while its pod was still there")
		if apierrors.IsNotFound(vmiErr) && apierrors.IsNotFound(podErr) {
			break
		}
		require.True(t, time.Now().Before(deadline), "web's VMI and pod still there: %v, %v", vmiErr, podErr)
		time.Sleep(10 * time.Millisecond)
	}
}
