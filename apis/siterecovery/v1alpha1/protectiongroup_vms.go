package v1alpha1

import "slices"

// VMNamespaces are the namespaces of the group's VMs, each once, in the
// order spec.virtualMachines first names them.
func (g *ProtectionGroup) VMNamespaces() []string {
	var out []string
	for _, vm := range g.Spec.VirtualMachines {
		if !slices.Contains(out, vm.Namespace) {
			out = append(out, vm.Namespace)
		}
	}
	return out
}
