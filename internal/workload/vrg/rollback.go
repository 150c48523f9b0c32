package vrg

import (
	"context"
	"fmt"
	"time"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

const (
	// RolledBackAnnotation on an application PVC names the image it was rolled
	// back to when its VRG became primary: the step is done for that image.
	RolledBackAnnotation = "dr.siterecovery.trilio.io/rolled-back-to"
	// RollbackLabel marks the objects of a rollback; its value is the VRG's
	// name.
	RollbackLabel = "dr.siterecovery.trilio.io/rollback"
	// rollbackPoll is how often a rollback looks at the movers and snapshots
	// it waits for, which the VRG does not watch.
	rollbackPoll = time.Second
)

// rollback brings every received PVC back to its group's last complete image
// before the VRG uses it as primary. The destinations write straight into the
// application's PVCs (copyMethod Direct), so a sync interrupted by the
// failover can leave a PVC partly written. Standard mode copies the whole
// image back through a local ReplicationDestination and ReplicationSource
// pair; diff mode sends only the blocks that differ between the PVC's current
// state and the image. Every step is named after the PVC and found again
// after a crash; a PVC whose annotation names its image is done.
func (r *Reconciler) rollback(ctx context.Context, s *scope) error {
	list := &drv1alpha1.ReplicationGroupDestinationList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.vrg.Namespace), client.MatchingLabels{VolSyncVRGLabel: s.vrg.Name}); err != nil {
		return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("listing ReplicationGroupDestinations: %w", err))
	}
	diff := drv1alpha1.IsDiffSyncEnabled(s.vrg.Annotations)
	var waiting []string
	for i := range list.Items {
		rgd := &list.Items[i]
		for _, li := range rgd.Status.LatestImages {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.vrg.Namespace, Name: li.PVCName}, pvc); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return flow.Transient(srv1alpha1.ReasonReadFailed, err)
			}
			if pvc.Annotations[RolledBackAnnotation] == li.Snapshot.Name {
				// Done; a crash between the mark and the cleanup left
				// objects that only this finds again.
				if err := r.cleanupLeftovers(ctx, pvc.Namespace, "rb-"+pvc.Name); err != nil {
					return flow.Transient(srv1alpha1.ReasonCleanupFailed, fmt.Errorf("cleaning up the rollback of PVC %s: %w", pvc.Name, err))
				}
				continue
			}
			step, err := r.rollbackPVC(ctx, s, pvc, li.Snapshot.Name, diff)
			if err != nil {
				return flow.Transient("RollbackFailed", fmt.Errorf("rolling PVC %s back to %s: %w", pvc.Name, li.Snapshot.Name, err))
			}
			if step != "" {
				waiting = append(waiting, fmt.Sprintf("PVC %s: %s", pvc.Name, step))
			}
		}
	}
	if len(waiting) > 0 {
		s.progress = fmt.Sprintf("rolling back to the last complete image: %v", waiting)
		return flow.Waiting(drv1alpha1.ReasonProgressing, rollbackPoll, "%s", s.progress)
	}
	return nil
}

// rollbackPVC runs the next step of one PVC's rollback and says what it waits
// for; empty once the PVC holds the image and the rollback cleaned up.
func (r *Reconciler) rollbackPVC(ctx context.Context, s *scope, pvc *corev1.PersistentVolumeClaim, image string, diff bool) (string, error) {
	ns, name := pvc.Namespace, "rb-"+pvc.Name
	// 1. Pause the group's destination: nothing may write into the PVC meanwhile.
	if err := r.pauseDestination(ctx, ns, pvc.Name); err != nil {
		return "", err
	}
	base := ""
	if diff {
		// 2. The PVC's current state, the base the image is compared with.
		base = name + "-base"
		ready, err := r.ensureSnapshot(ctx, s, pvc, base)
		if err != nil || !ready {
			return "snapshot of the current state not ready", err
		}
	}
	// 3. A local destination writing into the application's PVC.
	rd, err := r.ensureLocalDestination(ctx, s, pvc, name, diff)
	if err != nil {
		return "", err
	}
	address := ""
	if rd.Status != nil && rd.Status.RsyncTLS != nil {
		address = ptr.Deref(rd.Status.RsyncTLS.Address, "")
	}
	if address == "" {
		return "local destination has no address yet", nil
	}
	// 4. A PVC restored from the image, the source side of the pair.
	src := name + "-src"
	bound, err := r.ensureRestored(ctx, s, pvc, src, image)
	if err != nil || !bound {
		return "PVC restored from the image not bound", err
	}
	// 5. A local source sending the image (diff: what differs from the base).
	trigger := "rollback-" + image
	rs, err := r.ensureLocalSource(ctx, s, pvc, name, src, base, image, address, trigger, diff)
	if err != nil {
		return "", err
	}
	// 6. Wait for the sync.
	if rs.Status == nil || rs.Status.LastManualSync != trigger {
		return "local sync running", nil
	}
	// 7. Pause the local destination, record the step, then 8. clean up.
	if err := r.pauseDestination(ctx, ns, name); err != nil {
		return "", err
	}
	patched := pvc.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[RolledBackAnnotation] = image
	if err := r.patchPVC(ctx, pvc, patched); err != nil {
		return "", err
	}
	return "", r.cleanupRollback(ctx, ns, name)
}

// rollbackObjects are the objects a PVC's rollback named name creates.
func rollbackObjects(ns, name string) []client.Object {
	return []client.Object{
		&volsyncv1alpha1.ReplicationSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&volsyncv1alpha1.ReplicationDestination{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-src"}},
		&snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-base"}},
	}
}

// cleanupRollback deletes what a PVC's rollback created.
func (r *Reconciler) cleanupRollback(ctx context.Context, ns, name string) error {
	for _, o := range rollbackObjects(ns, name) {
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, o)); err != nil {
			return err
		}
	}
	return nil
}

// cleanupLeftovers deletes what a finished rollback still has, reading the
// cache first: it runs on every reconcile of a rolled-back VRG, and a delete
// of what is gone is still a write.
func (r *Reconciler) cleanupLeftovers(ctx context.Context, ns, name string) error {
	for _, o := range rollbackObjects(ns, name) {
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if o.GetDeletionTimestamp() != nil {
			continue
		}
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, o)); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) pauseDestination(ctx context.Context, ns, name string) error {
	rd := &volsyncv1alpha1.ReplicationDestination{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rd); err != nil {
		return client.IgnoreNotFound(err)
	}
	if rd.Spec.Paused {
		return nil
	}
	before := rd.DeepCopy()
	rd.Spec.Paused = true
	return client.IgnoreNotFound(r.Client.Patch(ctx, rd, client.MergeFrom(before)))
}

func (r *Reconciler) rollbackMeta(s *scope, ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{RollbackLabel: s.vrg.Name}}
}

// ensureSnapshot snapshots the PVC and reports whether the snapshot is ready.
func (r *Reconciler) ensureSnapshot(ctx context.Context, s *scope, pvc *corev1.PersistentVolumeClaim, name string) (bool, error) {
	vs := &snapshotv1.VolumeSnapshot{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: pvc.Namespace, Name: name}, vs)
	if apierrors.IsNotFound(err) {
		class, cerr := r.snapshotClass(ctx, pvc)
		if cerr != nil {
			return false, cerr
		}
		vs = &snapshotv1.VolumeSnapshot{ObjectMeta: r.rollbackMeta(s, pvc.Namespace, name), Spec: snapshotv1.VolumeSnapshotSpec{
			Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(pvc.Name)}, VolumeSnapshotClassName: class}}
		return false, client.IgnoreAlreadyExists(r.Client.Create(ctx, vs))
	}
	if err != nil {
		return false, err
	}
	return vs.Status != nil && ptr.Deref(vs.Status.ReadyToUse, false), nil
}

// snapshotClass is the VolumeSnapshotClass of the PVC's driver, nil (the
// default class) when none matches.
func (r *Reconciler) snapshotClass(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*string, error) {
	sc := &storagev1.StorageClass{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: storageClassName(pvc)}, sc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	list := &snapshotv1.VolumeSnapshotClassList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil, err
	}
	for _, c := range list.Items {
		if c.Driver == sc.Provisioner {
			return ptr.To(c.Name), nil
		}
	}
	return nil, nil
}

// ensureLocalDestination is the destination of the pair, writing straight
// into the application's PVC.
func (r *Reconciler) ensureLocalDestination(ctx context.Context, s *scope, pvc *corev1.PersistentVolumeClaim, name string, diff bool) (*volsyncv1alpha1.ReplicationDestination, error) {
	rd := &volsyncv1alpha1.ReplicationDestination{ObjectMeta: metav1.ObjectMeta{Namespace: pvc.Namespace, Name: name}}
	secret := drv1alpha1.VolSyncPSKSecretName(s.vrg.Name)
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, rd, func() error {
		rd.Labels = map[string]string{RollbackLabel: s.vrg.Name}
		if rd.Spec.Paused {
			// Paused once the sync completed: leave it so.
			return nil
		}
		if diff {
			provider, err := r.provisioner(ctx, pvc)
			if err != nil {
				return err
			}
			rd.Spec.External = &volsyncv1alpha1.ReplicationDestinationExternalSpec{Provider: provider, Parameters: map[string]string{
				"copyMethod": string(volsyncv1alpha1.CopyMethodDirect), "destinationPVC": pvc.Name, "keySecret": secret}}
			return nil
		}
		rd.Spec.RsyncTLS = &volsyncv1alpha1.ReplicationDestinationRsyncTLSSpec{
			ReplicationDestinationVolumeOptions: volsyncv1alpha1.ReplicationDestinationVolumeOptions{
				CopyMethod: volsyncv1alpha1.CopyMethodDirect, DestinationPVC: ptr.To(pvc.Name)},
			KeySecret: ptr.To(secret),
		}
		return nil
	})
	return rd, err
}

func (r *Reconciler) provisioner(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, error) {
	sc := &storagev1.StorageClass{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: storageClassName(pvc)}, sc); err != nil {
		return "", err
	}
	return sc.Provisioner, nil
}

// ensureRestored is a PVC restored from the image (diff mode: the shallow
// PVC the External source names); it reports whether the PVC is bound.
func (r *Reconciler) ensureRestored(ctx context.Context, s *scope, pvc *corev1.PersistentVolumeClaim, name, image string) (bool, error) {
	restored := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: pvc.Namespace, Name: name}, restored)
	if apierrors.IsNotFound(err) {
		restored = &corev1.PersistentVolumeClaim{ObjectMeta: r.rollbackMeta(s, pvc.Namespace, name), Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: pvc.Spec.StorageClassName, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			Resources:  pvc.Spec.Resources,
			DataSource: &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: image},
		}}
		return false, client.IgnoreAlreadyExists(r.Client.Create(ctx, restored))
	}
	if err != nil {
		return false, err
	}
	return restored.Status.Phase == corev1.ClaimBound, nil
}

// ensureLocalSource is the source of the pair, triggered once with trigger.
func (r *Reconciler) ensureLocalSource(ctx context.Context, s *scope, pvc *corev1.PersistentVolumeClaim, name, src, base, image, address, trigger string, diff bool) (*volsyncv1alpha1.ReplicationSource, error) {
	rs := &volsyncv1alpha1.ReplicationSource{ObjectMeta: metav1.ObjectMeta{Namespace: pvc.Namespace, Name: name}}
	secret := drv1alpha1.VolSyncPSKSecretName(s.vrg.Name)
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, rs, func() error {
		rs.Labels = map[string]string{RollbackLabel: s.vrg.Name}
		rs.Spec.SourcePVC = src
		rs.Spec.Trigger = &volsyncv1alpha1.ReplicationSourceTriggerSpec{Manual: trigger}
		if diff {
			provider, err := r.provisioner(ctx, pvc)
			if err != nil {
				return err
			}
			rs.Spec.External = &volsyncv1alpha1.ReplicationSourceExternalSpec{Provider: provider, Parameters: map[string]string{
				"copyMethod": string(volsyncv1alpha1.CopyMethodDirect), "volumeName": src,
				"baseSnapshotName": base, "targetSnapshotName": image, "address": address, "keySecret": secret}}
			return nil
		}
		rs.Spec.RsyncTLS = &volsyncv1alpha1.ReplicationSourceRsyncTLSSpec{
			ReplicationSourceVolumeOptions: volsyncv1alpha1.ReplicationSourceVolumeOptions{CopyMethod: volsyncv1alpha1.CopyMethodDirect},
			KeySecret:                      ptr.To(secret), Address: ptr.To(address),
		}
		return nil
	})
	return rs, err
}
