package rgd

import (
	"context"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// DoNotDeleteLabel on a snapshot keeps VolSync from deleting it when a newer
// image replaces it.
const DoNotDeleteLabel = "volsync.backube/do-not-delete"

// retainImages keeps the recorded images and every destination's newest image
// (the next recorded set, mid-cycle), and deletes the images it kept before
// that are neither: a failover in the middle of a cycle then still finds the
// previous complete set.
func (r *Reconciler) retainImages(ctx context.Context, rgd *drv1alpha1.ReplicationGroupDestination, rds []*volsyncv1alpha1.ReplicationDestination) error {
	keep := map[string]bool{}
	for _, li := range rgd.Status.LatestImages {
		keep[li.Snapshot.Name] = true
	}
	for _, rd := range rds {
		if rd.Status != nil && rd.Status.LatestImage != nil && rd.Status.LatestImage.Kind == "VolumeSnapshot" {
			keep[rd.Status.LatestImage.Name] = true
		}
	}
	for name := range keep {
		vs := &snapshotv1.VolumeSnapshot{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: rgd.Namespace, Name: name}, vs); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return flow.Transient(srv1alpha1.ReasonReadFailed, err)
			}
			continue
		}
		if vs.Labels[DoNotDeleteLabel] == "true" && vs.Labels[volsync.RGDLabel] == rgd.Name {
			continue
		}
		before := vs.DeepCopy()
		if vs.Labels == nil {
			vs.Labels = map[string]string{}
		}
		vs.Labels[DoNotDeleteLabel] = "true"
		vs.Labels[volsync.RGDLabel] = rgd.Name
		if err := r.Client.Patch(ctx, vs, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
			return flow.Transient(srv1alpha1.ReasonPatchFailed, err)
		}
	}
	kept := &snapshotv1.VolumeSnapshotList{}
	if err := r.Client.List(ctx, kept, client.InNamespace(rgd.Namespace), client.MatchingLabels{volsync.RGDLabel: rgd.Name, DoNotDeleteLabel: "true"}); err != nil {
		return flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	for i := range kept.Items {
		if keep[kept.Items[i].Name] {
			continue
		}
		if err := r.Client.Delete(ctx, &kept.Items[i]); client.IgnoreNotFound(err) != nil {
			return flow.Transient(srv1alpha1.ReasonDeleteFailed, err)
		}
	}
	return nil
}

// deleteImages deletes the images the group kept and each destination's
// newest one, which the group may not have kept yet. The destinations' own
// snapshots are read first: once the destinations are gone nothing names them.
func (r *Reconciler) deleteImages(ctx context.Context, rgd *drv1alpha1.ReplicationGroupDestination, rds []volsyncv1alpha1.ReplicationDestination) error {
	kept := &snapshotv1.VolumeSnapshotList{}
	if err := r.uncached().List(ctx, kept, client.InNamespace(rgd.Namespace), client.MatchingLabels{volsync.RGDLabel: rgd.Name, DoNotDeleteLabel: "true"}); err != nil {
		return flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	names := map[string]bool{}
	for _, vs := range kept.Items {
		names[vs.Name] = true
	}
	for _, rd := range rds {
		if rd.Status != nil && rd.Status.LatestImage != nil && rd.Status.LatestImage.Kind == "VolumeSnapshot" {
			names[rd.Status.LatestImage.Name] = true
		}
	}
	for name := range names {
		vs := &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: rgd.Namespace, Name: name}}
		if err := r.Client.Delete(ctx, vs); client.IgnoreNotFound(err) != nil {
			return flow.Transient(srv1alpha1.ReasonDeleteFailed, err)
		}
	}
	return nil
}
