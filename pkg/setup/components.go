package setup

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/siterecovery/siterecovery/pkg/protectiongroup"
	"github.com/siterecovery/siterecovery/pkg/vrg"
)

// PGOptions are pg-controller's own settings.
type PGOptions struct {
	// OperatorNamespace is where the shared global VolumeGroupReplications live.
	OperatorNamespace string
}

// PGController returns the Register function of pg-controller: the workload-tier
// ProtectionGroup and VolumeReplicationGroup reconcilers.
func PGController(p PGOptions) Register {
	return func(mgr ctrl.Manager, _ Options) error {
		if err := protectiongroup.SetupWithManager(mgr); err != nil {
			return err
		}
		return vrg.SetupWithManager(mgr, vrg.Options{OperatorNamespace: p.OperatorNamespace})
	}
}
