package testfailover

import (
	"context"
	"fmt"
	"sort"
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// snapshotting isolates the test namespace, then takes one VolumeSnapshot per
// replicated disk next to its PVC (a snapshot must live in its PVC's namespace)
// and waits until all are ready. Replication keeps running: a CSI snapshot of the
// Secondary's backing volume is a crash-consistent copy per disk, or an
// application-consistent one when the group asks for it (cut, consistency.go).
func (r *Reconciler) snapshotting(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.reload(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	rc, err := r.dr(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureIsolation(ctx, s, rc); err != nil {
		return ctrl.Result{}, err
	}
	disks, err := r.disks(ctx, s, rc)
	if err != nil {
		return ctrl.Result{}, err
	}
	cluster := s.tf.Spec.TargetCluster
	// The DR replicas of the disks not snapshotted yet must be UpToDate; one
	// that is not fails the test before any of those snapshots is requested.
	existing := map[string]*snapshotv1.VolumeSnapshot{}
	var unsnapshotted []disk
	for _, d := range disks {
		vs := &snapshotv1.VolumeSnapshot{}
		err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: d.namespace, Name: snapshotName(s.tf, d.vm, d.volume)}, vs)
		switch {
		case err == nil:
			existing[d.namespace+"/"+vs.Name] = vs
		case apierrors.IsNotFound(err):
			unsnapshotted = append(unsnapshotted, d)
		default:
			return ctrl.Result{}, remoteErr(cluster, "reading VolumeSnapshot of "+d.String(), err)
		}
	}
	if err := r.replicasUpToDate(ctx, s, rc, unsnapshotted); err != nil {
		return ctrl.Result{}, err
	}
	classes, err := r.snapshotClasses(ctx, s, rc, unsnapshotted)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(unsnapshotted) > 0 {
		if err := r.cut(ctx, s, rc, unsnapshotted, classes); err != nil {
			return ctrl.Result{}, err
		}
	}
	var waiting []string
	for _, d := range disks {
		key := d.namespace + "/" + snapshotName(s.tf, d.vm, d.volume)
		vs, err := r.requestSnapshot(ctx, s, rc, d, existing[key], classes[key])
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := snapshotError(vs); err != nil {
			return ctrl.Result{}, err
		}
		if !ready(vs) {
			waiting = append(waiting, d.String())
		}
	}
	if len(waiting) > 0 {
		return ctrl.Result{}, waitFor("waiting for %d snapshot(s) to become ready: %s", len(waiting), strings.Join(waiting, ", "))
	}
	s.trail.Enter(srv1alpha1.TestFailoverRestoring, "%d snapshot(s) of the DR copies are ready; restoring them into %s", len(disks), s.namespace())
	return ctrl.Result{}, nil
}

// requestSnapshot is the VolumeSnapshot of disk d: vs when it exists already,
// else one of class created now (or found, when another reconcile created it
// first).
func (r *Reconciler) requestSnapshot(ctx context.Context, s *scope, rc *remote.Remote, d disk, vs *snapshotv1.VolumeSnapshot, class *string) (*snapshotv1.VolumeSnapshot, error) {
	if vs != nil {
		return vs, nil
	}
	cluster := s.tf.Spec.TargetCluster
	vs = &snapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.namespace, Name: snapshotName(s.tf, d.vm, d.volume),
			Labels: labelsOf(s.tf, d.vm),
			Annotations: map[string]string{annotationVM: d.vm, annotationVolume: d.volume, annotationClaim: d.claim,
				AnnotationSourcePVC: d.source.Name}},
		Spec: snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(d.source.Name)},
			VolumeSnapshotClassName: class},
	}
	if err := rc.Direct.Create(ctx, vs); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, remoteErr(cluster, "creating VolumeSnapshot "+vs.Name, err)
		}
		if err := rc.Direct.Get(ctx, client.ObjectKeyFromObject(vs), vs); err != nil {
			return nil, remoteErr(cluster, "reading VolumeSnapshot "+vs.Name, err)
		}
	}
	return vs, nil
}

// restoring carries every snapshot into the isolated namespace (a pre-provisioned
// VolumeSnapshotContent with the same snapshot handle and deletionPolicy Retain,
// bound to a VolumeSnapshot there) and creates a PVC from each copy.
func (r *Reconciler) restoring(ctx context.Context, s *scope) (ctrl.Result, error) {
	rc, err := r.dr(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	snaps, err := r.productionSnapshots(ctx, s, rc)
	if err != nil {
		return ctrl.Result{}, err
	}
	cluster := s.tf.Spec.TargetCluster
	var waiting []string
	for i := range snaps {
		src := &snaps[i]
		if err := snapshotError(src); err != nil {
			return ctrl.Result{}, err
		}
		copyVS, err := r.ensureCopy(ctx, s, rc, src)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := snapshotError(copyVS); err != nil {
			return ctrl.Result{}, err
		}
		if !ready(copyVS) {
			waiting = append(waiting, "snapshot "+copyVS.Name)
			continue
		}
		pvc, err := r.ensureRestoredPVC(ctx, s, rc, src, copyVS)
		if err != nil {
			return ctrl.Result{}, remoteErr(cluster, "restoring PVC "+copyVS.Name, err)
		}
		if bound, err := r.bindingDone(ctx, rc, pvc); err != nil {
			return ctrl.Result{}, remoteErr(cluster, "reading StorageClass of "+pvc.Name, err)
		} else if !bound {
			waiting = append(waiting, "PVC "+pvc.Name)
		}
	}
	if len(waiting) > 0 {
		return ctrl.Result{}, waitFor("waiting for %s", strings.Join(waiting, ", "))
	}
	s.trail.Enter(srv1alpha1.TestFailoverBooting, "%d PVC(s) restored in %s; starting the test VMs", len(snaps), s.namespace())
	return ctrl.Result{}, nil
}

// productionSnapshots are the snapshots Snapshotting took, sorted by name.
func (r *Reconciler) productionSnapshots(ctx context.Context, s *scope, rc *remote.Remote) ([]snapshotv1.VolumeSnapshot, error) {
	list := &snapshotv1.VolumeSnapshotList{}
	if err := rc.Direct.List(ctx, list, client.MatchingLabels{LabelUID: string(s.tf.UID)}); err != nil {
		return nil, remoteErr(s.tf.Spec.TargetCluster, "listing VolumeSnapshots", err)
	}
	var out []snapshotv1.VolumeSnapshot
	for _, vs := range list.Items {
		if vs.Namespace != s.namespace() && vs.DeletionTimestamp == nil {
			out = append(out, vs)
		}
	}
	if len(out) == 0 {
		return nil, invalid(srv1alpha1.ReasonSnapshotFailed, "the snapshots of the DR copies are gone from %s", s.tf.Spec.TargetCluster)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name })
	return out, nil
}

// ensureCopy makes the snapshot src available in the isolated namespace.
func (r *Reconciler) ensureCopy(ctx context.Context, s *scope, rc *remote.Remote, src *snapshotv1.VolumeSnapshot) (*snapshotv1.VolumeSnapshot, error) {
	cluster := s.tf.Spec.TargetCluster
	content := &snapshotv1.VolumeSnapshotContent{}
	if err := rc.Direct.Get(ctx, client.ObjectKey{Name: ptr.Deref(src.Status.BoundVolumeSnapshotContentName, "")}, content); err != nil {
		return nil, remoteErr(cluster, "reading the VolumeSnapshotContent of "+src.Name, err)
	}
	if content.Status == nil || ptr.Deref(content.Status.SnapshotHandle, "") == "" {
		return nil, invalid(srv1alpha1.ReasonSnapshotFailed, "VolumeSnapshotContent %s of snapshot %s/%s has no snapshot handle", content.Name, src.Namespace, src.Name)
	}
	vm := src.Annotations[annotationVM]
	volume := src.Annotations[annotationVolume]
	name := src.Name
	cp := &snapshotv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: contentName(s.tf, vm, volume), Labels: labelsOf(s.tf, vm)},
		Spec: snapshotv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Kind: "VolumeSnapshot", APIVersion: snapshotv1.SchemeGroupVersion.String(),
				Namespace: s.namespace(), Name: name},
			// The production-side snapshot owns the data; deleting the copy never
			// deletes it.
			DeletionPolicy:          snapshotv1.VolumeSnapshotContentRetain,
			Driver:                  content.Spec.Driver,
			VolumeSnapshotClassName: content.Spec.VolumeSnapshotClassName,
			Source:                  snapshotv1.VolumeSnapshotContentSource{SnapshotHandle: content.Status.SnapshotHandle},
			SourceVolumeMode:        content.Spec.SourceVolumeMode,
		},
	}
	if err := rc.Direct.Create(ctx, cp); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, remoteErr(cluster, "creating VolumeSnapshotContent "+cp.Name, err)
	}
	vs := &snapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace(), Name: name, Labels: labelsOf(s.tf, vm), Annotations: src.Annotations},
		Spec:       snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To(cp.Name)}},
	}
	if err := rc.Direct.Create(ctx, vs); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, remoteErr(cluster, "creating VolumeSnapshot "+s.namespace()+"/"+name, err)
		}
		if err := rc.Direct.Get(ctx, client.ObjectKeyFromObject(vs), vs); err != nil {
			return nil, remoteErr(cluster, "reading VolumeSnapshot "+s.namespace()+"/"+name, err)
		}
	}
	return vs, nil
}

// ensureRestoredPVC creates the test PVC from the snapshot copy, shaped like the
// snapshotted PVC.
func (r *Reconciler) ensureRestoredPVC(ctx context.Context, s *scope, rc *remote.Remote, src, cp *snapshotv1.VolumeSnapshot) (*corev1.PersistentVolumeClaim, error) {
	orig := &corev1.PersistentVolumeClaim{}
	if err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: src.Namespace, Name: ptr.Deref(src.Spec.Source.PersistentVolumeClaimName, "")}, orig); err != nil {
		return nil, err
	}
	size := orig.Spec.Resources.Requests[corev1.ResourceStorage]
	if rs := cp.Status.RestoreSize; rs != nil && rs.Cmp(size) > 0 {
		size = *rs
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace(), Name: cp.Name, Labels: labelsOf(s.tf, src.Annotations[annotationVM]),
			Annotations: map[string]string{annotationVolume: src.Annotations[annotationVolume]}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      orig.Spec.AccessModes,
			VolumeMode:       orig.Spec.VolumeMode,
			StorageClassName: orig.Spec.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			DataSource:       &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: cp.Name},
		},
	}
	if err := rc.Direct.Create(ctx, pvc); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		if err := rc.Direct.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
			return nil, err
		}
	}
	return pvc, nil
}

// bindingDone reports whether a restored PVC is bound, or will only bind once
// the VM's pod uses it (a WaitForFirstConsumer storage class).
func (r *Reconciler) bindingDone(ctx context.Context, rc *remote.Remote, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	if pvc.Status.Phase == corev1.ClaimBound {
		return true, nil
	}
	name := ptr.Deref(pvc.Spec.StorageClassName, "")
	if name == "" {
		return false, nil
	}
	sc := &storagev1.StorageClass{}
	if err := rc.Direct.Get(ctx, client.ObjectKey{Name: name}, sc); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return ptr.Deref(sc.VolumeBindingMode, "") == storagev1.VolumeBindingWaitForFirstConsumer, nil
}

func ready(vs *snapshotv1.VolumeSnapshot) bool {
	return vs.Status != nil && ptr.Deref(vs.Status.ReadyToUse, false) && ptr.Deref(vs.Status.BoundVolumeSnapshotContentName, "") != ""
}

// snapshotError turns a snapshot's status.error into a verdict.
func snapshotError(vs *snapshotv1.VolumeSnapshot) error {
	if vs.Status == nil || vs.Status.Error == nil || ptr.Deref(vs.Status.Error.Message, "") == "" {
		return nil
	}
	return invalid(srv1alpha1.ReasonSnapshotFailed, "%s", fmt.Sprintf("VolumeSnapshot %s/%s failed: %s", vs.Namespace, vs.Name, *vs.Status.Error.Message))
}
