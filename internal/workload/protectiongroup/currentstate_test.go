package protectiongroup

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// A group's state moves with what its VMs are asked, not only with what
// KubeVirt reports: the status write that follows the ask already says
// stopping or starting, and a halted VM whose instance is gone is stopped.
func TestCurrentStateFollowsTheAsk(t *testing.T) {
	// The instance runs when the VM is ready (the usual case); vmi overrides.
	vm := func(strategy kubevirtv1.VirtualMachineRunStrategy, printable kubevirtv1.VirtualMachinePrintableStatus, ready, hasVMI bool) vmState {
		v := &kubevirtv1.VirtualMachine{}
		v.Spec.RunStrategy = ptr.To(strategy)
		v.Status.PrintableStatus, v.Status.Ready = printable, ready
		return vmState{vm: v, hasVMI: hasVMI, vmiRunning: hasVMI && ready, ask: asked(v)}
	}
	vmi := func(v vmState, exists, running bool) vmState {
		v.hasVMI, v.vmiRunning = exists, running
		return v
	}
	const (
		always, halted, rerun      = kubevirtv1.RunStrategyAlways, kubevirtv1.RunStrategyHalted, kubevirtv1.RunStrategyRerunOnFailure
		running, stopping, stopped = kubevirtv1.VirtualMachineStatusRunning, kubevirtv1.VirtualMachineStatusStopping, kubevirtv1.VirtualMachineStatusStopped
	)
	for _, tc := range []struct {
		name    string
		desired srv1alpha1.GroupState
		vms     []vmState
		want    srv1alpha1.GroupState
	}{
		{"running and asked to run", srv1alpha1.StateRunning, []vmState{vm(always, running, true, true)}, srv1alpha1.StateRunning},
		{"asked to stop, KubeVirt still reports it running", srv1alpha1.StateStopped, []vmState{vm(halted, running, true, true)}, srv1alpha1.StateStopping},
		{"asked to stop, instance gone, KubeVirt status behind", srv1alpha1.StateStopped, []vmState{vm(halted, stopping, false, false)}, srv1alpha1.StateStopped},
		{"asked to stop, instance still there", srv1alpha1.StateStopped, []vmState{vm(halted, stopped, false, true)}, srv1alpha1.StateStopping},
		{"asked to run, not started yet", srv1alpha1.StateRunning, []vmState{vm(always, stopped, false, false)}, srv1alpha1.StateStarting},
		{"held halted while the group may not start", srv1alpha1.StateRunning, []vmState{vm(halted, stopped, false, false)}, srv1alpha1.StateStopped},
		{"a strategy the guest decides: KubeVirt's status tells", srv1alpha1.StateRunning, []vmState{vm(rerun, stopped, false, false)}, srv1alpha1.StateStopped},
		// KubeVirt's VM status trails its instance: a VM stopped and at once
		// asked to run again still reports its previous instance Running.
		{"asked to run again, previous instance gone, VM status behind", srv1alpha1.StateRunning,
			[]vmState{vmi(vm(always, running, true, false), false, false)}, srv1alpha1.StateStarting},
		{"asked to run again, new instance not running yet, VM status behind", srv1alpha1.StateRunning,
			[]vmState{vmi(vm(always, running, true, true), true, false)}, srv1alpha1.StateStarting},
		{"one VM asked to stop holds the group in stopping", srv1alpha1.StateStopped,
			[]vmState{vm(halted, stopped, false, false), vm(halted, running, true, true)}, srv1alpha1.StateStopping},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scope{group: &srv1alpha1.ProtectionGroup{Spec: srv1alpha1.ProtectionGroupSpec{DesiredState: tc.desired}}, vms: tc.vms}
			require.Equal(t, tc.want, currentState(s))
		})
	}
}
