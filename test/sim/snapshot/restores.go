package snapshot

import (
	"context"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/siterecovery/siterecovery/test/sim/blockstore"
)

// ReadyPoll is how often the simulator looks again at something it waits for
// that it does not watch (a snapshot a claim restores from, a missing content).
const ReadyPoll = 200 * time.Millisecond

const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// Annotations of a claim the PV controller bound; kube-scheduler counts a
// claim as bound only with bind-completed.
const (
	annBindCompleted     = "pv.kubernetes.io/bind-completed"
	annBoundByController = "pv.kubernetes.io/bound-by-controller"
)

// restores plays the external-provisioner and the driver for claims restored
// from a snapshot of Options.Driver: the provisioner waits for the snapshot
// to be ready, reads the snapshot handle from its bound content and asks the
// driver for a volume from it (CSI CreateVolume with a snapshot content
// source), then the PV controller binds the claim.
type restores struct {
	client client.Client
	reader client.Reader
	data   *blockstore.Store
	driver string
}

// Reconcile binds one claim restored from a snapshot, or releases a deleted one.
func (r *restores) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.reader.Get(ctx, req.NamespacedName, pvc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ds := pvc.Spec.DataSource
	if ds == nil || ds.Kind != "VolumeSnapshot" || ptr.Deref(ds.APIGroup, "") != snapshotv1.GroupName {
		return ctrl.Result{}, nil
	}
	if pvc.DeletionTimestamp != nil {
		return ctrl.Result{}, r.release(ctx, pvc)
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		return ctrl.Result{}, nil
	}
	vs := &snapshotv1.VolumeSnapshot{}
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: pvc.Namespace, Name: ds.Name}, vs); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{RequeueAfter: ReadyPoll}, nil
		}
		return ctrl.Result{}, err
	}
	if vs.Status == nil || !ptr.Deref(vs.Status.ReadyToUse, false) {
		return ctrl.Result{RequeueAfter: ReadyPoll}, nil
	}
	content := &snapshotv1.VolumeSnapshotContent{}
	if err := r.reader.Get(ctx, client.ObjectKey{Name: ptr.Deref(vs.Status.BoundVolumeSnapshotContentName, "")}, content); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{RequeueAfter: ReadyPoll}, nil
		}
		return ctrl.Result{}, err
	}
	// Another driver's snapshot is its provisioner's to restore.
	if content.Spec.Driver != r.driver {
		return ctrl.Result{}, nil
	}
	if content.Status == nil || content.Status.SnapshotHandle == nil {
		return ctrl.Result{RequeueAfter: ReadyPoll}, nil
	}
	return ctrl.Result{}, r.bind(ctx, pvc, vs, *content.Status.SnapshotHandle)
}

// bind provisions a PV for the claim and binds both.
func (r *restores) bind(ctx context.Context, pvc *corev1.PersistentVolumeClaim, vs *snapshotv1.VolumeSnapshot, handle string) error {
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if vs.Status.RestoreSize != nil && vs.Status.RestoreSize.Cmp(size) > 0 {
		size = *vs.Status.RestoreSize
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + string(pvc.UID)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   pvc.Spec.AccessModes,
			VolumeMode:                    pvc.Spec.VolumeMode,
			StorageClassName:              ptr.Deref(pvc.Spec.StorageClassName, ""),
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			// The volume handle is the PV's name, as the storage
			// simulator's: the driver finds a volume to snapshot by its
			// handle, and Data keys its blocks by PV name.
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: r.driver, VolumeHandle: "pvc-" + string(pvc.UID)}},
		},
	}
	if r.data != nil && !r.data.Exists(pv.Name) {
		r.data.Copy(handle, pv.Name)
	}
	if err := r.client.Create(ctx, pv); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	pv.Status.Phase = corev1.VolumeBound
	if err := r.client.Status().Update(ctx, pv); err != nil && !apierrors.IsConflict(err) {
		return err
	}
	if pvc.Spec.VolumeName == "" || pvc.Annotations[annBindCompleted] == "" {
		before := pvc.DeepCopy()
		if pvc.Spec.VolumeName == "" {
			pvc.Spec.VolumeName = pv.Name
		}
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, annBindCompleted, "yes")
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, annBoundByController, "yes")
		if err := r.client.Patch(ctx, pvc, client.MergeFrom(before)); err != nil {
			return err
		}
	}
	before := pvc.DeepCopy()
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: size}
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	return r.client.Status().Patch(ctx, pvc, client.MergeFrom(before))
}

// release plays the pvc-protection controller and the reclaimer: the claim's
// finalizer goes and its dynamically provisioned PV is deleted.
func (r *restores) release(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Spec.VolumeName != "" {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvc.Spec.VolumeName}}
		if err := r.client.Delete(ctx, pv); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if !controllerutil.ContainsFinalizer(pvc, pvcProtectionFinalizer) {
		return nil
	}
	before := pvc.DeepCopy()
	controllerutil.RemoveFinalizer(pvc, pvcProtectionFinalizer)
	return client.IgnoreNotFound(r.client.Patch(ctx, pvc, client.MergeFrom(before)))
}
