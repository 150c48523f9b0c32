package mover

import (
	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// SetupWithManager runs the mover for the cluster of mgr, named cluster, whose
// scheme must hold the core, VolSync and snapshot types. The snapshot simulator
// must run on the same manager: it takes the destination's snapshots.
func (m *Mover) SetupWithManager(mgr ctrl.Manager, cluster string) error {
	skip := controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4}
	c, reader := mgr.GetClient(), mgr.GetAPIReader()
	images := &imageCollector{client: c, reader: reader}
	if err := ctrl.NewControllerManagedBy(mgr).Named("volsync-destination-simulator").WithOptions(skip).
		For(&volsyncv1alpha1.ReplicationDestination{}).
		Complete(&destinations{mover: m, cluster: cluster, client: c, reader: reader, images: images}); err != nil {
		return err
	}
	isImage := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[CreatedByLabel] != "" })
	if err := ctrl.NewControllerManagedBy(mgr).Named("volsync-image-collector-simulator").WithOptions(skip).
		For(&snapshotv1.VolumeSnapshot{}, builder.WithPredicates(isImage)).
		Complete(images); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("volsync-source-simulator").WithOptions(skip).
		For(&volsyncv1alpha1.ReplicationSource{}).
		Complete(&sources{mover: m, cluster: cluster, client: c, reader: reader, clock: clock.RealClock{}})
}
