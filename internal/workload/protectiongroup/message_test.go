package protectiongroup

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestVMMessageSaysWhyTheSchedulerCannotStartIt checks that a VM whose
// launcher pod the scheduler cannot place reports the scheduler's reason,
// which KubeVirt copies to the VM as its PodScheduled condition, and that
// the controller's own problem comes first.
func TestVMMessageSaysWhyTheSchedulerCannotStartIt(t *testing.T) {
	vm := &kubevirtv1.VirtualMachine{}
	vm.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusUnschedulable
	vm.Status.Conditions = []kubevirtv1.VirtualMachineCondition{
		{Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse, Message: "not ready"},
		{Type: kubevirtv1.VirtualMachineConditionType(corev1.PodScheduled), Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/3 nodes are available: 3 Insufficient memory."},
	}
	require.Equal(t, "cannot be scheduled: 0/3 nodes are available: 3 Insufficient memory.", vmState{vm: vm}.message())
	require.Equal(t, "sets both", vmState{vm: vm, problem: "sets both"}.message())
	vm.Status.Conditions = vm.Status.Conditions[:1]
	require.Empty(t, vmState{vm: vm}.message(), "a VM that is merely not ready yet has no problem")
	require.Empty(t, vmState{}.message())
}
