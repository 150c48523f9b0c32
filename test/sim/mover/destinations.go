package mover

import (
	"context"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type destinations struct {
	mover   *Mover
	cluster string
	client  client.Client
	reader  client.Reader
	images  *imageCollector
}

// Reconcile publishes one destination's address and creates its PVC.
func (r *destinations) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rd := &volsyncv1alpha1.ReplicationDestination{}
	if err := r.reader.Get(ctx, req.NamespacedName, rd); err != nil {
		if apierrors.IsNotFound(err) {
			r.unpublish(req.NamespacedName)
			return ctrl.Result{}, r.images.collectOwnedBy(ctx, req.Namespace, req.Name)
		}
		return ctrl.Result{}, err
	}
	if rd.DeletionTimestamp != nil {
		r.unpublish(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if err := r.ensurePVC(ctx, rd); err != nil {
		return ctrl.Result{}, err
	}
	address := r.mover.publishedAddress(r.cluster, req.NamespacedName, rd.UID)
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

// unpublish stops a destination that went from answering.
func (r *destinations) unpublish(key types.NamespacedName) {
	if address := r.mover.withdraw(r.cluster, key); address != "" {
		r.mover.unregister(address, r.cluster)
	}
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
	// The PVC VolSync provisions takes spec.rsyncTLS.volumeMode (upstream:
	// api/v1alpha1/rsync_tls_types.go, "used for the dynamic destination PVC").
	if rd.Spec.RsyncTLS != nil {
		pvc.Spec.VolumeMode = rd.Spec.RsyncTLS.VolumeMode
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
