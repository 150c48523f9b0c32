package mover

import (
	"context"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type destinations struct {
	mover   *Mover
	cluster string
	client  client.Client
	reader  client.Reader
}

// Reconcile publishes one destination's address and creates its PVC.
func (r *destinations) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	address := Address(req.Namespace, req.Name)
	rd := &volsyncv1alpha1.ReplicationDestination{}
	if err := r.reader.Get(ctx, req.NamespacedName, rd); err != nil {
		if apierrors.IsNotFound(err) {
			r.mover.unregister(address, r.cluster)
			return ctrl.Result{}, collectImages(ctx, r.client, r.reader, req.Namespace, req.Name)
		}
		return ctrl.Result{}, err
	}
	if rd.DeletionTimestamp != nil {
		r.mover.unregister(address, r.cluster)
		return ctrl.Result{}, collectImages(ctx, r.client, r.reader, req.Namespace, req.Name)
	}
	if err := r.ensurePVC(ctx, rd); err != nil {
		return ctrl.Result{}, err
	}
	r.mover.register(address, endpoint{cluster: r.cluster, client: r.client, reader: r.reader, key: req.NamespacedName})
	if rd.Status != nil && rd.Status.RsyncTLS != nil && ptr.Deref(rd.Status.RsyncTLS.Address, "") == address {
		return ctrl.Result{}, nil
	}
	if rd.Status == nil {
		rd.Status = &volsyncv1alpha1.ReplicationDestinationStatus{}
	}
	rd.Status.RsyncTLS = &volsyncv1alpha1.ReplicationDestinationRsyncTLSStatus{Address: ptr.To(address), KeySecret: keySecret(rd)}
	return ctrl.Result{}, client.IgnoreNotFound(r.client.Status().Update(ctx, rd))
}

// collectImages deletes the snapshots a deleted destination took that nobody
// kept (do-not-delete): VolSync owns them through an owner reference, which
// the garbage collector follows, and test API servers run no garbage
// collector. Read past the cache, so that an image taken a moment before is
// found too.
func collectImages(ctx context.Context, c client.Client, reader client.Reader, namespace, rd string) error {
	list := &snapshotv1.VolumeSnapshotList{}
	if err := reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{createdByLabel: rd}); err != nil {
		return err
	}
	for i := range list.Items {
		if vs := &list.Items[i]; vs.Labels[DoNotDeleteLabel] != "true" {
			if err := c.Delete(ctx, vs); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// ensurePVC creates volsync-<rd>-dst when the destination names no PVC.
func (r *destinations) ensurePVC(ctx context.Context, rd *volsyncv1alpha1.ReplicationDestination) error {
	if destinationPVC(rd) != "volsync-"+rd.Name+"-dst" {
		return nil
	}
	o := volumeOptions(rd)
	size := ptr.Deref(o.Capacity, resource.MustParse("1Gi"))
	modes := o.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: destinationPVC(rd), Namespace: rd.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: o.StorageClassName, AccessModes: modes,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}},
	}
	if err := r.client.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// volumeOptions are the destination's volume options of either spec.
func volumeOptions(rd *volsyncv1alpha1.ReplicationDestination) volsyncv1alpha1.ReplicationDestinationVolumeOptions {
	if rd.Spec.RsyncTLS != nil {
		return rd.Spec.RsyncTLS.ReplicationDestinationVolumeOptions
	}
	o := volsyncv1alpha1.ReplicationDestinationVolumeOptions{}
	if rd.Spec.External != nil {
		p := rd.Spec.External.Parameters
		o.CopyMethod = volsyncv1alpha1.CopyMethodType(p["copyMethod"])
		if p["destinationPVC"] != "" {
			o.DestinationPVC = ptr.To(p["destinationPVC"])
		}
	}
	return o
}

// destinationPVC is the PVC a destination writes into.
func destinationPVC(rd *volsyncv1alpha1.ReplicationDestination) string {
	if n := ptr.Deref(volumeOptions(rd).DestinationPVC, ""); n != "" {
		return n
	}
	return "volsync-" + rd.Name + "-dst"
}

func keySecret(rd *volsyncv1alpha1.ReplicationDestination) *string {
	if rd.Spec.RsyncTLS != nil && rd.Spec.RsyncTLS.KeySecret != nil {
		return rd.Spec.RsyncTLS.KeySecret
	}
	return ptr.To("volsync-rsync-tls-" + rd.Name)
}
