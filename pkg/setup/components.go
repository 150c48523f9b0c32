package setup

import (
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/siterecovery/siterecovery/pkg/protectiongroup"
)

// QuorumManager registers the quorum-tier reconcilers. The DR namespace is
// mandatory: one quorum-manager serves exactly one dr-<name> namespace.
func QuorumManager(_ ctrl.Manager, o Options) error {
	if o.Namespace == "" {
		return errors.New("--namespace is required: quorum-manager serves one DR namespace (dr-<name>)")
	}
	return nil
}

// PGController registers the workload-tier reconcilers of pg-controller.
func PGController(mgr ctrl.Manager, _ Options) error {
	return protectiongroup.SetupWithManager(mgr)
}
