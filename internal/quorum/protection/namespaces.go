package protection

import (
	"slices"
	"strings"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// checkNamespaceAllowed fails a request whose VM lives in an application
// namespace missing from Options.AllowedNamespaces. The quorum chart's
// admission policy refuses such a request when it is made; this catches one
// made before the list changed, or on a cluster without the policy, before
// anything is created for it. nil AllowedNamespaces checks nothing (an
// in-process quorum-manager of the tests); the binary always sets it.
func (r *Reconciler) checkNamespaceAllowed(s *scope) error {
	allowed := r.Options.AllowedNamespaces
	vm := s.req.Spec.VirtualMachine
	if allowed == nil || slices.Contains(allowed, vm.Namespace) {
		return nil
	}
	if len(allowed) == 0 {
		return flow.Stalled(srv1alpha1.ReasonNamespaceNotAllowed,
			"no application namespace may be protected from DR namespace %s: protection.allowedNamespaces of its quorum-control-plane release (quorum-manager --protection-allowed-namespaces) is empty; VirtualMachine %s/%s was not protected",
			s.req.Namespace, vm.Namespace, vm.Name)
	}
	return flow.Stalled(srv1alpha1.ReasonNamespaceNotAllowed,
		"VirtualMachine %s/%s may not be protected from DR namespace %s: its namespace is not in protection.allowedNamespaces of the quorum-control-plane release (quorum-manager --protection-allowed-namespaces: %s)",
		vm.Namespace, vm.Name, s.req.Namespace, strings.Join(allowed, ", "))
}
