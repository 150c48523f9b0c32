package kubevirt_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/siterecovery/siterecovery/test/harness"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
)

const (
	startDelay = 300 * time.Millisecond
	stopDelay  = 200 * time.Millisecond
	waitLimit  = 15 * time.Second
)

// startSimulator starts one cluster and a manager running the simulator against it.
func startSimulator(t *testing.T) client.Client {
	t.Helper()
	return startSimulatorWith(t, kubevirtsim.Options{StartDelay: startDelay, StopDelay: stopDelay})
}

// startSimulatorWith starts one cluster and a simulator with opts.
func startSimulatorWith(t *testing.T, opts kubevirtsim.Options) client.Client {
	t.Helper()
	log.SetLogger(zap.New(zap.WriteTo(t.Output())))
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, kubevirtv1.AddToScheme(scheme))
	z := harness.Start(t, harness.Options{Scheme: scheme}, harness.Primary)
	c := z.Clusters[harness.Primary]

	mgr, err := ctrl.NewManager(c.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	require.NoError(t, err)
	require.NoError(t, kubevirtsim.SetupWithManager(mgr, opts))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return c.Client
}

func newVM(name string) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: kubevirtv1.VirtualMachineSpec{
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			},
		},
	}
}

// waitFor polls check until it returns "" (done) or waitLimit passes; the last message
// explains a timeout.
func waitFor(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", waitLimit, what, msg)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// vmIs returns a check that the VM shows printable status want with matching ready and
// created flags, and that its VMI exists exactly when the VM is Running or Stopping.
func vmIs(t *testing.T, cl client.Client, name string, want kubevirtv1.VirtualMachinePrintableStatus) func() string {
	ready := want == kubevirtv1.VirtualMachineStatusRunning
	created := ready || want == kubevirtv1.VirtualMachineStatusStopping
	return func() string {
		vm := &kubevirtv1.VirtualMachine{}
		if err := cl.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, vm); err != nil {
			return err.Error()
		}
		if vm.Status.PrintableStatus != want || vm.Status.Ready != ready || vm.Status.Created != created {
			return fmt.Sprintf("status %q ready=%v created=%v", vm.Status.PrintableStatus, vm.Status.Ready, vm.Status.Created)
		}
		err := cl.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &kubevirtv1.VirtualMachineInstance{})
		switch {
		case created && err != nil:
			return "VMI: " + err.Error()
		case !created && !apierrors.IsNotFound(err):
			return fmt.Sprintf("VMI still there (err=%v)", err)
		}
		return ""
	}
}

func setRunStrategy(t *testing.T, cl client.Client, name string, s kubevirtv1.VirtualMachineRunStrategy) {
	t.Helper()
	vm := &kubevirtv1.VirtualMachine{}
	require.NoError(t, cl.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, vm))
	patch := client.MergeFrom(vm.DeepCopy())
	vm.Spec.RunStrategy = &s
	require.NoError(t, cl.Patch(t.Context(), vm, patch))
}

func TestSimulator(t *testing.T) {
	cl := startSimulator(t)

	t.Run("runStrategy Always starts, Halted stops", func(t *testing.T) {
		vm := newVM("always")
		always := kubevirtv1.RunStrategyAlways
		vm.Spec.RunStrategy = &always
		created := time.Now()
		require.NoError(t, cl.Create(t.Context(), vm))
		waitFor(t, "Starting", vmIs(t, cl, "always", kubevirtv1.VirtualMachineStatusStarting))
		waitFor(t, "Running", vmIs(t, cl, "always", kubevirtv1.VirtualMachineStatusRunning))
		assert.GreaterOrEqual(t, time.Since(created), startDelay, "StartDelay honoured")

		vmi := &kubevirtv1.VirtualMachineInstance{}
		require.NoError(t, cl.Get(t.Context(), client.ObjectKeyFromObject(vm), vmi))
		assert.Equal(t, kubevirtv1.Running, vmi.Status.Phase)
		require.NotNil(t, metav1.GetControllerOf(vmi))
		assert.Equal(t, vm.UID, metav1.GetControllerOf(vmi).UID)
		assert.Equal(t, "always", vmi.Labels["app"], "template labels copied")
		assert.Contains(t, vmi.Status.Conditions, kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue,
			LastTransitionTime: vmi.Status.Conditions[0].LastTransitionTime,
		})

		stopping := time.Now()
		setRunStrategy(t, cl, "always", kubevirtv1.RunStrategyHalted)
		waitFor(t, "Stopping", vmIs(t, cl, "always", kubevirtv1.VirtualMachineStatusStopping))
		waitFor(t, "Stopped", vmIs(t, cl, "always", kubevirtv1.VirtualMachineStatusStopped))
		assert.GreaterOrEqual(t, time.Since(stopping), stopDelay, "StopDelay honoured")
	})

	t.Run("deprecated spec.running", func(t *testing.T) {
		vm := newVM("legacy")
		vm.Spec.Running = new(false)
		require.NoError(t, cl.Create(t.Context(), vm))
		waitFor(t, "Stopped", vmIs(t, cl, "legacy", kubevirtv1.VirtualMachineStatusStopped))

		patch := client.MergeFrom(vm.DeepCopy())
		vm.Spec.Running = new(true)
		require.NoError(t, cl.Patch(t.Context(), vm, patch))
		waitFor(t, "Running", vmIs(t, cl, "legacy", kubevirtv1.VirtualMachineStatusRunning))

		patch = client.MergeFrom(vm.DeepCopy())
		vm.Spec.Running = new(false)
		require.NoError(t, cl.Patch(t.Context(), vm, patch))
		waitFor(t, "Stopped", vmIs(t, cl, "legacy", kubevirtv1.VirtualMachineStatusStopped))
	})

	t.Run("Manual keeps the current state", func(t *testing.T) {
		vm := newVM("manual")
		vm.Spec.RunStrategy = new(kubevirtv1.RunStrategyAlways)
		require.NoError(t, cl.Create(t.Context(), vm))
		waitFor(t, "Running", vmIs(t, cl, "manual", kubevirtv1.VirtualMachineStatusRunning))
		setRunStrategy(t, cl, "manual", kubevirtv1.RunStrategyManual)
		waitFor(t, "status.runStrategy Manual", func() string {
			got := &kubevirtv1.VirtualMachine{}
			if err := cl.Get(t.Context(), client.ObjectKeyFromObject(vm), got); err != nil {
				return err.Error()
			}
			if got.Status.RunStrategy != kubevirtv1.RunStrategyManual {
				return "status.runStrategy " + string(got.Status.RunStrategy)
			}
			return ""
		})
		assert.Empty(t, vmIs(t, cl, "manual", kubevirtv1.VirtualMachineStatusRunning)(), "still running")
	})

	t.Run("running and runStrategy together are rejected", func(t *testing.T) {
		// The test clusters' admission policies refuse such a VM, as KubeVirt's
		// webhook does, so it never reaches the simulator.
		vm := newVM("both")
		vm.Spec.Running = new(true)
		vm.Spec.RunStrategy = new(kubevirtv1.RunStrategyAlways)
		err := cl.Create(t.Context(), vm)
		require.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)

		vm.Spec.Running = nil
		require.NoError(t, cl.Create(t.Context(), vm))
		waitFor(t, "Running", vmIs(t, cl, "both", kubevirtv1.VirtualMachineStatusRunning))
		patch := client.MergeFrom(vm.DeepCopy())
		vm.Spec.Running = new(true)
		err = cl.Patch(t.Context(), vm, patch)
		require.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
	})

	t.Run("deleting the VM deletes its VMI", func(t *testing.T) {
		vm := newVM("doomed")
		vm.Spec.RunStrategy = new(kubevirtv1.RunStrategyAlways)
		require.NoError(t, cl.Create(t.Context(), vm))
		waitFor(t, "Running", vmIs(t, cl, "doomed", kubevirtv1.VirtualMachineStatusRunning))
		require.NoError(t, cl.Delete(t.Context(), vm))
		waitFor(t, "VMI deleted", func() string {
			err := cl.Get(t.Context(), client.ObjectKeyFromObject(vm), &kubevirtv1.VirtualMachineInstance{})
			if apierrors.IsNotFound(err) {
				return ""
			}
			return fmt.Sprintf("VMI still there (err=%v)", err)
		})
	})
}
