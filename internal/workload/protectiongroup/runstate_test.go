package protectiongroup

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

func TestSetRunning(t *testing.T) {
	strategy := func(s kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
		vm := &kubevirtv1.VirtualMachine{}
		vm.Spec.RunStrategy = &s
		return vm
	}
	running := func(b bool) *kubevirtv1.VirtualMachine {
		vm := &kubevirtv1.VirtualMachine{}
		vm.Spec.Running = &b
		return vm
	}
	for _, tc := range []struct {
		name         string
		vm           *kubevirtv1.VirtualMachine
		run          bool
		wantChanged  bool
		wantStrategy *kubevirtv1.VirtualMachineRunStrategy
		wantRunning  *bool
		wantAnnot    string
	}{
		{"stop Always keeps it for later", strategy(kubevirtv1.RunStrategyAlways), false, true, ptr.To(kubevirtv1.RunStrategyHalted), nil, "Always"},
		{"stop RerunOnFailure keeps it", strategy(kubevirtv1.RunStrategyRerunOnFailure), false, true, ptr.To(kubevirtv1.RunStrategyHalted), nil, "RerunOnFailure"},
		{"stop a VM with neither field", &kubevirtv1.VirtualMachine{}, false, true, ptr.To(kubevirtv1.RunStrategyHalted), nil, "Always"},
		{"stop Halted is a no-op", strategy(kubevirtv1.RunStrategyHalted), false, false, ptr.To(kubevirtv1.RunStrategyHalted), nil, ""},
		{"start Halted without annotation", strategy(kubevirtv1.RunStrategyHalted), true, true, ptr.To(kubevirtv1.RunStrategyAlways), nil, ""},
		{"start Always is a no-op", strategy(kubevirtv1.RunStrategyAlways), true, false, ptr.To(kubevirtv1.RunStrategyAlways), nil, ""},
		{"deprecated running stops", running(true), false, true, nil, ptr.To(false), ""},
		{"deprecated running starts", running(false), true, true, nil, ptr.To(true), ""},
		{"deprecated running already stopped", running(false), false, false, nil, ptr.To(false), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.wantChanged, setRunning(tc.vm, tc.run))
			require.Equal(t, tc.wantStrategy, tc.vm.Spec.RunStrategy)
			require.Equal(t, tc.wantRunning, tc.vm.Spec.Running)
			require.Equal(t, tc.wantAnnot, tc.vm.Annotations[srv1alpha1.PreviousRunStrategyAnnotation])
			require.False(t, conflictingRunFields(tc.vm), "both run fields set")
		})
	}
}

func TestStopThenStartRestoresStrategy(t *testing.T) {
	for _, s := range []kubevirtv1.VirtualMachineRunStrategy{
		kubevirtv1.RunStrategyAlways, kubevirtv1.RunStrategyRerunOnFailure, kubevirtv1.RunStrategyOnce,
	} {
		vm := &kubevirtv1.VirtualMachine{}
		vm.Spec.RunStrategy = ptr.To(s)
		require.True(t, setRunning(vm, false))
		require.True(t, setRunning(vm, true))
		require.Equal(t, s, *vm.Spec.RunStrategy)
		require.NotContains(t, vm.Annotations, srv1alpha1.PreviousRunStrategyAnnotation)
	}
	// Manual would leave the VM stopped after a start, so the start uses Always.
	vm := &kubevirtv1.VirtualMachine{}
	vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyManual)
	setRunning(vm, false)
	setRunning(vm, true)
	require.Equal(t, kubevirtv1.RunStrategyAlways, *vm.Spec.RunStrategy)
}
