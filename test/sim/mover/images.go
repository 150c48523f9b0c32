package mover

import (
	"context"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreatedByLabel names the ReplicationDestination whose image a snapshot is.
const CreatedByLabel = "volsync.backube/created-by"

// imageOwner makes a destination the controller owner of its image, as VolSync
// does: the garbage collector deletes the image with its destination, unless
// the image is marked DoNotDeleteLabel, from which VolSync removes ownership.
func imageOwner(rd *volsyncv1alpha1.ReplicationDestination) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: volsyncv1alpha1.GroupVersion.String(), Kind: "ReplicationDestination",
		Name: rd.Name, UID: rd.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// imageCollector plays the garbage collector for destination images, which
// envtest does not run: an image whose owning destination is gone (or was
// recreated under another UID) is deleted, unless it is marked
// DoNotDeleteLabel. It runs on every image event, so an image made by a sync
// that raced its destination's deletion goes too, as it would on a cluster.
type imageCollector struct {
	client client.Client
	reader client.Reader
}

func (r *imageCollector) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vs := &snapshotv1.VolumeSnapshot{}
	if err := r.reader.Get(ctx, req.NamespacedName, vs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, r.collect(ctx, vs)
}

// collect deletes vs when its owning destination is gone.
func (r *imageCollector) collect(ctx context.Context, vs *snapshotv1.VolumeSnapshot) error {
	if vs.DeletionTimestamp != nil || vs.Labels[DoNotDeleteLabel] == "true" {
		return nil
	}
	owner := metav1.GetControllerOf(vs)
	if owner == nil || owner.Kind != "ReplicationDestination" {
		return nil
	}
	rd := &volsyncv1alpha1.ReplicationDestination{}
	err := r.reader.Get(ctx, client.ObjectKey{Namespace: vs.Namespace, Name: owner.Name}, rd)
	switch {
	case err == nil && rd.UID == owner.UID:
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	return client.IgnoreNotFound(r.client.Delete(ctx, vs))
}

// collectOwnedBy deletes the images of a destination that is gone.
func (r *imageCollector) collectOwnedBy(ctx context.Context, namespace, rd string) error {
	list := &snapshotv1.VolumeSnapshotList{}
	if err := r.reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{CreatedByLabel: rd}); err != nil {
		return err
	}
	for i := range list.Items {
		if err := r.collect(ctx, &list.Items[i]); err != nil {
			return err
		}
	}
	return nil
}
