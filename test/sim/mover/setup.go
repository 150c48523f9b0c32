package mover

import (
	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// SetupWithManager runs the mover for the cluster of mgr, named cluster, whose
// scheme must hold the core, VolSync and snapshot types. The snapshot simulator
// must run on the same manager: it takes the destination's snapshots.
func (m *Mover) SetupWithManager(mgr ctrl.Manager, cluster string) error {
	skip := controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4}
	c, reader := mgr.GetClient(), mgr.GetAPIReader()
	if err := ctrl.NewControllerManagedBy(mgr).Named("volsync-destination-simulator").WithOptions(skip).
		For(&volsyncv1alpha1.ReplicationDestination{}).
		Complete(&destinations{mover: m, cluster: cluster, client: c, reader: reader}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("volsync-source-simulator").WithOptions(skip).
		For(&volsyncv1alpha1.ReplicationSource{}).
		Complete(&sources{mover: m, cluster: cluster, client: c, reader: reader, clock: clock.RealClock{}})
}
