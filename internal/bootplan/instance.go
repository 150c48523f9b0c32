package bootplan

import (
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// ReadInstance notes what the gates read of a VM's instance: its Ready and
// AgentConnected conditions, and its first interface's address (the one a
// probe connects to).
func (f *Facts) ReadInstance(vmi *kubevirtv1.VirtualMachineInstance) {
	for _, c := range vmi.Status.Conditions {
		switch c.Type {
		case kubevirtv1.VirtualMachineInstanceReady:
			f.Ready = c.Status == corev1.ConditionTrue
		case kubevirtv1.VirtualMachineInstanceAgentConnected:
			f.AgentConnected = c.Status == corev1.ConditionTrue
		}
	}
	if len(vmi.Status.Interfaces) > 0 {
		f.Address = vmi.Status.Interfaces[0].IP
	}
}
