package snapshot

import (
	"context"
	"fmt"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type snapshots struct {
	client client.Client
	reader client.Reader
	opts   Options
}

// Reconcile makes one VolumeSnapshot ready, or cleans up after a deleted one.
func (r *snapshots) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vs := &snapshotv1.VolumeSnapshot{}
	if err := r.reader.Get(ctx, req.NamespacedName, vs); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.deleteBoundContents(ctx, req.Namespace, req.Name)
		}
		return ctrl.Result{}, err
	}
	if vs.DeletionTimestamp != nil || (vs.Status != nil && ptr.Deref(vs.Status.ReadyToUse, false)) {
		return ctrl.Result{}, nil
	}
	switch {
	case vs.Spec.Source.PersistentVolumeClaimName != nil:
		if left := vs.CreationTimestamp.Add(r.opts.ReadyDelay).Sub(r.opts.Clock.Now()); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
		return ctrl.Result{}, r.takeSnapshot(ctx, vs)
	case vs.Spec.Source.VolumeSnapshotContentName != nil:
		return r.bindPreProvisioned(ctx, vs)
	}
	return ctrl.Result{}, nil
}

// takeSnapshot creates the content of a dynamic snapshot and marks both ready.
func (r *snapshots) takeSnapshot(ctx context.Context, vs *snapshotv1.VolumeSnapshot) error {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: vs.Namespace, Name: *vs.Spec.Source.PersistentVolumeClaimName}, pvc); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		msg := fmt.Sprintf("source PVC %s not found", *vs.Spec.Source.PersistentVolumeClaimName)
		return r.setSnapshotStatus(ctx, vs, snapshotv1.VolumeSnapshotStatus{
			ReadyToUse: ptr.To(false), Error: &snapshotv1.VolumeSnapshotError{Time: ptr.To(metav1.NewTime(r.opts.Clock.Now())), Message: &msg},
		})
	}
	size := pvc.Status.Capacity[corev1.ResourceStorage]
	if size.IsZero() {
		size = pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	handle := "snap-" + string(vs.UID)
	if r.opts.Data != nil && !r.opts.Data.Exists(handle) {
		r.opts.Data.Copy(pvc.Spec.VolumeName, handle)
	}
	content := &snapshotv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-" + string(vs.UID)},
		Spec: snapshotv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Kind: "VolumeSnapshot", APIVersion: snapshotv1.SchemeGroupVersion.String(),
				Namespace: vs.Namespace, Name: vs.Name, UID: vs.UID},
			DeletionPolicy:          snapshotv1.VolumeSnapshotContentDelete,
			Driver:                  r.opts.Driver,
			VolumeSnapshotClassName: vs.Spec.VolumeSnapshotClassName,
			Source:                  snapshotv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To("vol-" + string(pvc.UID))},
			SourceVolumeMode:        pvc.Spec.VolumeMode,
		},
	}
	if err := r.ensureContent(ctx, content, snapshotv1.VolumeSnapshotContentStatus{
		SnapshotHandle: &handle, ReadyToUse: ptr.To(true), RestoreSize: ptr.To(size.Value()),
		CreationTime: ptr.To(r.opts.Clock.Now().UnixNano()),
	}); err != nil {
		return err
	}
	return r.setSnapshotStatus(ctx, vs, snapshotv1.VolumeSnapshotStatus{
		BoundVolumeSnapshotContentName: &content.Name, ReadyToUse: ptr.To(true), RestoreSize: &size,
		CreationTime: ptr.To(metav1.NewTime(r.opts.Clock.Now())),
	})
}

// bindPreProvisioned readies a snapshot made from an existing content.
func (r *snapshots) bindPreProvisioned(ctx context.Context, vs *snapshotv1.VolumeSnapshot) (ctrl.Result, error) {
	content := &snapshotv1.VolumeSnapshotContent{}
	if err := r.reader.Get(ctx, client.ObjectKey{Name: *vs.Spec.Source.VolumeSnapshotContentName}, content); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{RequeueAfter: ReadyPoll}, nil
		}
		return ctrl.Result{}, err
	}
	handle := ptr.Deref(content.Spec.Source.SnapshotHandle, "")
	if handle == "" {
		return ctrl.Result{}, nil
	}
	size, err := r.sizeOfHandle(ctx, handle)
	if err != nil {
		return ctrl.Result{}, err
	}
	if content.Status == nil || !ptr.Deref(content.Status.ReadyToUse, false) {
		content.Status = &snapshotv1.VolumeSnapshotContentStatus{SnapshotHandle: &handle, ReadyToUse: ptr.To(true),
			RestoreSize: size, CreationTime: ptr.To(r.opts.Clock.Now().UnixNano())}
		if err := r.client.Status().Update(ctx, content); err != nil {
			return ctrl.Result{}, err
		}
	}
	st := snapshotv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: &content.Name, ReadyToUse: ptr.To(true),
		CreationTime: ptr.To(metav1.NewTime(r.opts.Clock.Now()))}
	if vs.Status != nil {
		// A member of a group snapshot keeps naming its group.
		st.VolumeGroupSnapshotName = vs.Status.VolumeGroupSnapshotName
	}
	if size != nil {
		st.RestoreSize = resource.NewQuantity(*size, resource.BinarySI)
	}
	return ctrl.Result{}, r.setSnapshotStatus(ctx, vs, st)
}

// sizeOfHandle is the restore size of the dynamic content that took handle.
func (r *snapshots) sizeOfHandle(ctx context.Context, handle string) (*int64, error) {
	list := &snapshotv1.VolumeSnapshotContentList{}
	if err := r.reader.List(ctx, list); err != nil {
		return nil, err
	}
	for _, c := range list.Items {
		if c.Status != nil && ptr.Deref(c.Status.SnapshotHandle, "") == handle && c.Status.RestoreSize != nil {
			return c.Status.RestoreSize, nil
		}
	}
	return nil, nil
}

func (r *snapshots) ensureContent(ctx context.Context, content *snapshotv1.VolumeSnapshotContent, st snapshotv1.VolumeSnapshotContentStatus) error {
	if err := r.client.Create(ctx, content); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(content), content); err != nil {
			return err
		}
	}
	if content.Status != nil && ptr.Deref(content.Status.ReadyToUse, false) {
		return nil
	}
	content.Status = &st
	return r.client.Status().Update(ctx, content)
}

func (r *snapshots) setSnapshotStatus(ctx context.Context, vs *snapshotv1.VolumeSnapshot, st snapshotv1.VolumeSnapshotStatus) error {
	vs.Status = &st
	return client.IgnoreNotFound(r.client.Status().Update(ctx, vs))
}

// deleteBoundContents deletes the Delete-policy contents of a deleted snapshot.
func (r *snapshots) deleteBoundContents(ctx context.Context, namespace, name string) error {
	list := &snapshotv1.VolumeSnapshotContentList{}
	if err := r.reader.List(ctx, list); err != nil {
		return err
	}
	for i := range list.Items {
		c := &list.Items[i]
		ref := c.Spec.VolumeSnapshotRef
		if ref.Namespace == namespace && ref.Name == name && c.Spec.DeletionPolicy == snapshotv1.VolumeSnapshotContentDelete {
			if err := r.client.Delete(ctx, c); client.IgnoreNotFound(err) != nil {
				return err
			}
			if r.opts.Data != nil && c.Status != nil && c.Status.SnapshotHandle != nil {
				r.opts.Data.Delete(*c.Status.SnapshotHandle)
			}
		}
	}
	return nil
}
