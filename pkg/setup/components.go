package setup

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/siterecovery/siterecovery/pkg/protectiongroup"
)

// PGController registers the workload-tier reconcilers of pg-controller.
func PGController(mgr ctrl.Manager, _ Options) error {
	return protectiongroup.SetupWithManager(mgr)
}
