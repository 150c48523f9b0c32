package testfailover

import (
	"slices"
	"strings"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// checkNamespacesAllowed fails a test whose group lists a VM of a namespace
// missing from Options.AllowedNamespaces: a clone of another team's VM, even
// in an isolated namespace, is a copy of its data. The quorum chart's
// admission policy keeps such VMs out of new groups; this catches a group made
// before the list changed. nil AllowedNamespaces checks nothing (an in-process
// quorum-manager of the tests); the binary always sets it.
func (r *Reconciler) checkNamespacesAllowed(s *scope) error {
	allowed := r.AllowedNamespaces
	if allowed == nil {
		return nil
	}
	for _, vm := range s.group.Spec.VirtualMachines {
		if slices.Contains(allowed, vm.Namespace) {
			continue
		}
		list := strings.Join(allowed, ", ")
		if list == "" {
			list = "empty"
		}
		return invalid(srv1alpha1.ReasonNamespaceNotAllowed,
			"group %s lists VirtualMachine %s/%s, whose namespace is not in protection.allowedNamespaces of the quorum-control-plane release of DR namespace %s (quorum-manager --protection-allowed-namespaces: %s); it is not cloned. Remove the VM from the group (delete its ProtectionRequest) or list its namespace",
			s.group.Name, vm.Namespace, vm.Name, s.tf.Namespace, list)
	}
	return nil
}
