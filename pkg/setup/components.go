package setup

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/siterecovery/siterecovery/pkg/protectiongroup"
	"github.com/siterecovery/siterecovery/pkg/vrg"
)

// PGController registers the workload-tier reconcilers of pg-controller.
func PGController(mgr ctrl.Manager, _ Options) error {
	if err := protectiongroup.SetupWithManager(mgr); err != nil {
		return err
	}
	return vrg.SetupWithManager(mgr, vrg.Options{})
}
