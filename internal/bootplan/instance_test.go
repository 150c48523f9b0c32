package bootplan

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The gates read the instance's Ready and AgentConnected conditions and its
// first interface's address; other conditions and interfaces do not count.
func TestReadInstance(t *testing.T) {
	var f Facts
	f.ReadInstance(&kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{
		Conditions: []kubevirtv1.VirtualMachineInstanceCondition{
			{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue},
			{Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionFalse},
			{Type: kubevirtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue},
		},
		Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{{IP: "10.0.0.5"}, {IP: "10.1.0.5"}},
	}})
	require.Equal(t, Facts{Ready: true, Address: "10.0.0.5"}, f)
	var none Facts
	none.ReadInstance(&kubevirtv1.VirtualMachineInstance{})
	require.Equal(t, Facts{}, none)
}
