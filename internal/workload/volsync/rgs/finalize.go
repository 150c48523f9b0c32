package rgs

import (
	"context"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// finalize deletes everything the group created (its sources, restored PVCs
// and snapshots) before it lets go of the ReplicationGroupSource.
func (r *Reconciler) finalize(ctx context.Context, rgs *drv1alpha1.ReplicationGroupSource) error {
	if !controllerutil.ContainsFinalizer(rgs, Finalizer) {
		return nil
	}
	s := &scope{rgs: rgs}
	if err := r.deleteRestored(ctx, s); err != nil {
		return err
	}
	all, err := r.snapshots(ctx, s, "")
	if err != nil {
		return err
	}
	for i := range all {
		if err := r.Client.Delete(ctx, &all[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	sources := &volsyncv1alpha1.ReplicationSourceList{}
	if err := r.Client.List(ctx, sources, client.InNamespace(rgs.Namespace), client.MatchingLabels{volsync.RGSLabel: rgs.Name}); err != nil {
		return err
	}
	for i := range sources.Items {
		if err := r.Client.Delete(ctx, &sources.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	before := rgs.DeepCopy()
	controllerutil.RemoveFinalizer(rgs, Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, rgs, client.MergeFrom(before)))
}
