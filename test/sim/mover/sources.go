package mover

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConditionSynchronizing is VolSync's condition on a ReplicationSource.
const ConditionSynchronizing = "Synchronizing"

// DoNotDeleteLabel on a snapshot keeps VolSync from deleting it when a newer
// image replaces it.
const DoNotDeleteLabel = "volsync.backube/do-not-delete"

type sources struct {
	mover   *Mover
	cluster string
	client  client.Client
	reader  client.Reader
	clock   clock.PassiveClock
}

// Reconcile runs the manual sync a ReplicationSource asks for.
func (r *sources) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rs := &volsyncv1alpha1.ReplicationSource{}
	if err := r.reader.Get(ctx, req.NamespacedName, rs); err != nil {
		if apierrors.IsNotFound(err) {
			r.mover.setJob(r.jobKey(req.NamespacedName), nil)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	manual := ""
	if rs.Spec.Trigger != nil {
		manual = rs.Spec.Trigger.Manual
	}
	if rs.DeletionTimestamp != nil || rs.Spec.Paused || manual == "" || (rs.Status != nil && rs.Status.LastManualSync == manual) {
		return ctrl.Result{}, nil
	}
	if f, ok := r.mover.fault(req.NamespacedName); ok && f.Fail != "" {
		return r.moverFailed(ctx, rs, f.Fail)
	}
	dst, ok, err := r.mover.resolve(ctx, address(rs))
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok {
		return r.moverFailed(ctx, rs, fmt.Sprintf("cannot connect to %s: no destination listens there", address(rs)))
	}
	rd := &volsyncv1alpha1.ReplicationDestination{}
	if err := dst.client.Get(ctx, dst.key, rd); err != nil {
		return ctrl.Result{RequeueAfter: Poll}, client.IgnoreNotFound(err)
	}
	if rd.Spec.Paused {
		return ctrl.Result{RequeueAfter: Poll}, nil
	}
	if ctrlErr, moverErr, err := r.handshake(ctx, rs, rd, dst); err != nil || ctrlErr != "" || moverErr != "" {
		switch {
		case err != nil:
			return ctrl.Result{}, err
		case ctrlErr != "":
			return ctrl.Result{RequeueAfter: Poll}, r.setError(ctx, rs, ctrlErr)
		}
		return r.moverFailed(ctx, rs, moverErr)
	}
	if mismatch, ready, err := r.volumeModes(ctx, rs, rd, dst); err != nil || !ready || mismatch != "" {
		if err != nil || !ready {
			return ctrl.Result{RequeueAfter: Poll}, err
		}
		return r.moverFailed(ctx, rs, mismatch)
	}
	j, err := r.start(ctx, rs, rd, dst, manual)
	if err != nil || j == nil {
		return ctrl.Result{RequeueAfter: Poll}, err
	}
	if done := r.move(req.NamespacedName, j); !done {
		return ctrl.Result{RequeueAfter: Poll}, nil
	}
	image, err := r.image(ctx, rd, dst, j)
	if err != nil || image == nil {
		return ctrl.Result{RequeueAfter: Poll}, err
	}
	if err := r.finishDestination(ctx, rd, dst, j, image); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.finishSource(ctx, rs, j, manual)
}

func (r *sources) jobKey(key types.NamespacedName) string { return r.cluster + "/" + key.String() }

// start plans the sync once: the source and base images, and the destination
// volume it writes into. nil while the volumes are not bound yet.
func (r *sources) start(ctx context.Context, rs *volsyncv1alpha1.ReplicationSource, rd *volsyncv1alpha1.ReplicationDestination, dst endpoint, manual string) (*job, error) {
	key := r.jobKey(client.ObjectKeyFromObject(rs))
	if j := r.mover.job(key); j != nil && j.manual == manual {
		return j, nil
	}
	src, base, err := r.sourceImages(ctx, rs)
	if err != nil || src == "" {
		return nil, err
	}
	dstPVC := &corev1.PersistentVolumeClaim{}
	if err := dst.client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: destinationPVC(rd)}, dstPVC); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if dstPVC.Spec.VolumeName == "" {
		return nil, nil
	}
	j := &job{manual: manual, src: src, dst: dstPVC.Spec.VolumeName, plan: r.mover.data.Plan(base, src), full: base == "", start: r.clock.Now()}
	r.mover.setJob(key, j)
	return j, nil
}

// sourceImages are the image a sync reads and the base it diffs against
// (empty: a full sync).
func (r *sources) sourceImages(ctx context.Context, rs *volsyncv1alpha1.ReplicationSource) (src, base string, err error) {
	if ext := rs.Spec.External; ext != nil && ext.Parameters["targetSnapshotName"] != "" {
		if src, err = r.snapshotHandle(ctx, rs.Namespace, ext.Parameters["targetSnapshotName"]); err != nil || src == "" {
			return "", "", err
		}
		if b := ext.Parameters["baseSnapshotName"]; b != "" {
			if base, err = r.snapshotHandle(ctx, rs.Namespace, b); err != nil || base == "" {
				return "", "", err
			}
		}
		return src, base, nil
	}
	name := rs.Spec.SourcePVC
	if ext := rs.Spec.External; ext != nil && ext.Parameters["volumeName"] != "" {
		name = ext.Parameters["volumeName"]
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: name}, pvc); err != nil {
		return "", "", client.IgnoreNotFound(err)
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		return "", "", nil
	}
	return pvc.Spec.VolumeName, "", nil
}

// snapshotHandle is the handle of a ready snapshot; empty while it is not ready.
func (r *sources) snapshotHandle(ctx context.Context, namespace, name string) (string, error) {
	vs := &snapshotv1.VolumeSnapshot{}
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, vs); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if vs.Status == nil || !ptr.Deref(vs.Status.ReadyToUse, false) || vs.Status.BoundVolumeSnapshotContentName == nil {
		return "", nil
	}
	content := &snapshotv1.VolumeSnapshotContent{}
	if err := r.reader.Get(ctx, client.ObjectKey{Name: *vs.Status.BoundVolumeSnapshotContentName}, content); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if content.Status == nil {
		return "", nil
	}
	return ptr.Deref(content.Status.SnapshotHandle, ""), nil
}

// move writes the planned blocks; a stall writes half of them and holds.
func (r *sources) move(key types.NamespacedName, j *job) bool {
	upTo := len(j.plan)
	if f, ok := r.mover.fault(key); ok && f.Stall {
		upTo = len(j.plan) / 2
	}
	if j.done < upTo {
		j.bytes += r.mover.data.Apply(j.src, j.dst, j.plan[j.done:upTo])
		j.done = upTo
	}
	return j.done == len(j.plan)
}

// image snapshots the destination PVC when its copyMethod is Snapshot; nil
// while the snapshot is not ready.
func (r *sources) image(ctx context.Context, rd *volsyncv1alpha1.ReplicationDestination, dst endpoint, j *job) (*corev1.TypedLocalObjectReference, error) {
	if volumeOptions(rd).CopyMethod == volsyncv1alpha1.CopyMethodDirect || volumeOptions(rd).CopyMethod == volsyncv1alpha1.CopyMethodNone {
		return &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: destinationPVC(rd)}, nil
	}
	sum := sha256.Sum256([]byte(r.cluster + "/" + string(rd.UID) + "/" + j.manual))
	vs := &snapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "volsync-" + rd.Name + "-" + hex.EncodeToString(sum[:])[:10], Namespace: rd.Namespace,
			Labels:          map[string]string{CreatedByLabel: rd.Name},
			OwnerReferences: []metav1.OwnerReference{imageOwner(rd)}},
		Spec: snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(destinationPVC(rd))},
			VolumeSnapshotClassName: volumeOptions(rd).VolumeSnapshotClassName},
	}
	if err := dst.client.Create(ctx, vs); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		if err := dst.client.Get(ctx, client.ObjectKeyFromObject(vs), vs); err != nil {
			return nil, err
		}
	}
	if vs.Status == nil || !ptr.Deref(vs.Status.ReadyToUse, false) {
		return nil, nil
	}
	return &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: vs.Name}, nil
}

// finishDestination makes the image the destination's latestImage and deletes
// the one it replaces.
func (r *sources) finishDestination(ctx context.Context, rd *volsyncv1alpha1.ReplicationDestination, dst endpoint, j *job, image *corev1.TypedLocalObjectReference) error {
	if rd.Status == nil {
		rd.Status = &volsyncv1alpha1.ReplicationDestinationStatus{}
	}
	old := rd.Status.LatestImage
	if old != nil && old.Kind == image.Kind && old.Name == image.Name {
		return nil
	}
	now := metav1.NewTime(r.clock.Now())
	rd.Status.LatestImage = image
	rd.Status.LastSyncStartTime = &metav1.Time{Time: j.start}
	rd.Status.LastSyncTime = &now
	rd.Status.LastSyncDuration = &metav1.Duration{Duration: now.Sub(j.start)}
	if err := dst.client.Status().Update(ctx, rd); err != nil {
		return err
	}
	if old == nil || old.Kind != "VolumeSnapshot" {
		return nil
	}
	stale := &snapshotv1.VolumeSnapshot{}
	if err := dst.client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: old.Name}, stale); err != nil {
		return client.IgnoreNotFound(err)
	}
	if stale.Labels[DoNotDeleteLabel] == "true" {
		return nil
	}
	return client.IgnoreNotFound(dst.client.Delete(ctx, stale))
}

// finishSource reports the completed sync on the source.
func (r *sources) finishSource(ctx context.Context, rs *volsyncv1alpha1.ReplicationSource, j *job, manual string) error {
	if rs.Status == nil {
		rs.Status = &volsyncv1alpha1.ReplicationSourceStatus{}
	}
	now := metav1.NewTime(r.clock.Now())
	rs.Status.LastManualSync = manual
	rs.Status.LastSyncStartTime = &metav1.Time{Time: j.start}
	rs.Status.LastSyncTime = &now
	rs.Status.LastSyncDuration = &metav1.Duration{Duration: now.Sub(j.start)}
	rs.Status.LatestMoverStatus = &volsyncv1alpha1.MoverStatus{Result: volsyncv1alpha1.MoverResultSuccessful,
		Logs: fmt.Sprintf("sent %d bytes (%d blocks, full=%t)", j.bytes, len(j.plan), j.full)}
	rs.Status.External = map[string]string{"bytesTransferred": strconv.FormatInt(j.bytes, 10)}
	meta.SetStatusCondition(&rs.Status.Conditions, metav1.Condition{Type: ConditionSynchronizing, Status: metav1.ConditionFalse,
		Reason: "WaitingForManual", Message: "Synchronization complete, waiting for a manual trigger"})
	// Recorded first: a mover stopped during the write (a test's crash) may
	// have written it, and then never syncs this trigger again.
	key := client.ObjectKeyFromObject(rs)
	r.mover.record(key, Transfer{Cluster: r.cluster, Manual: manual, Full: j.full, Bytes: j.bytes})
	if err := r.client.Status().Update(ctx, rs); err != nil {
		return err
	}
	r.mover.setJob(r.jobKey(key), nil)
	r.mover.succeeded(r.jobKey(key))
	return nil
}

// moverFailed reports a failed mover as VolSync does: the latest mover status
// is Failed with the mover's log, the sync stays in progress, and the mover
// runs again, after a backoff that grows with each failure (VolSync reruns a
// failed mover Job and recreates it once its backoff limit is reached).
func (r *sources) moverFailed(ctx context.Context, rs *volsyncv1alpha1.ReplicationSource, msg string) (ctrl.Result, error) {
	retry := r.mover.backoff(r.jobKey(client.ObjectKeyFromObject(rs)))
	if rs.Status == nil {
		rs.Status = &volsyncv1alpha1.ReplicationSourceStatus{}
	}
	if m := rs.Status.LatestMoverStatus; m != nil && m.Result == volsyncv1alpha1.MoverResultFailed && m.Logs == msg &&
		meta.IsStatusConditionTrue(rs.Status.Conditions, ConditionSynchronizing) {
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	rs.Status.LatestMoverStatus = &volsyncv1alpha1.MoverStatus{Result: volsyncv1alpha1.MoverResultFailed, Logs: msg}
	meta.SetStatusCondition(&rs.Status.Conditions, metav1.Condition{Type: ConditionSynchronizing, Status: metav1.ConditionTrue,
		Reason: volsyncv1alpha1.SynchronizingReasonSync, Message: "Synchronization in-progress"})
	return ctrl.Result{RequeueAfter: retry}, client.IgnoreNotFound(r.client.Status().Update(ctx, rs))
}

// setError reports an error of VolSync's controller itself, before any mover
// runs: the Synchronizing condition's reason Error.
func (r *sources) setError(ctx context.Context, rs *volsyncv1alpha1.ReplicationSource, msg string) error {
	if rs.Status == nil {
		rs.Status = &volsyncv1alpha1.ReplicationSourceStatus{}
	}
	if c := meta.FindStatusCondition(rs.Status.Conditions, ConditionSynchronizing); c != nil && c.Reason == volsyncv1alpha1.SynchronizingReasonError && c.Message == msg {
		return nil
	}
	meta.SetStatusCondition(&rs.Status.Conditions, metav1.Condition{Type: ConditionSynchronizing, Status: metav1.ConditionFalse,
		Reason: volsyncv1alpha1.SynchronizingReasonError, Message: msg})
	return client.IgnoreNotFound(r.client.Status().Update(ctx, rs))
}

// handshake plays the TLS handshake of the two movers: both must read the same
// pre-shared key. It returns why they cannot connect: ctrlErr when the
// source's controller cannot read its key (no mover starts), moverErr when
// the handshake fails; both empty when they connect.
func (r *sources) handshake(ctx context.Context, rs *volsyncv1alpha1.ReplicationSource, rd *volsyncv1alpha1.ReplicationDestination, dst endpoint) (ctrlErr, moverErr string, err error) {
	read := func(c client.Reader, namespace, name string) ([]byte, error) {
		s := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
			return nil, err
		}
		return s.Data[PSKKey], nil
	}
	srcKey, err := read(r.reader, rs.Namespace, sourceKeySecret(rs))
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("key Secret %s not found", sourceKeySecret(rs)), "", nil
	}
	if err != nil {
		return "", "", err
	}
	dstKey, err := read(dst.reader, rd.Namespace, destinationKeySecret(rd))
	if apierrors.IsNotFound(err) {
		return "", fmt.Sprintf("TLS handshake with %s failed: the destination has no key Secret %s", address(rs), destinationKeySecret(rd)), nil
	}
	if err != nil {
		return "", "", err
	}
	if len(srcKey) == 0 || !bytes.Equal(srcKey, dstKey) {
		return "", fmt.Sprintf("TLS handshake with %s failed: the pre-shared keys differ", address(rs)), nil
	}
	return "", "", nil
}

// sourceKeySecret is the Secret a source reads its pre-shared key from.
func sourceKeySecret(rs *volsyncv1alpha1.ReplicationSource) string {
	if rs.Spec.RsyncTLS != nil && rs.Spec.RsyncTLS.KeySecret != nil {
		return *rs.Spec.RsyncTLS.KeySecret
	}
	if rs.Spec.External != nil && rs.Spec.External.Parameters["keySecret"] != "" {
		return rs.Spec.External.Parameters["keySecret"]
	}
	return "volsync-rsync-tls-" + rs.Name
}

// destinationKeySecret is the Secret a destination reads its key from.
func destinationKeySecret(rd *volsyncv1alpha1.ReplicationDestination) string {
	if rd.Spec.External != nil && rd.Spec.External.Parameters["keySecret"] != "" {
		return rd.Spec.External.Parameters["keySecret"]
	}
	return ptr.Deref(keySecret(rd), "")
}

// volumeModes refuses a pair whose volumes differ in volumeMode, as VolSync's
// movers fail it: upstream mover-rsync-tls/client.sh sends with diskrsync
// when its volume is a block device and with rsync when it is a directory,
// and mover-rsync-tls/server.sh receives the same way by its own volume's
// kind; internal/controller/mover/rsynctls/mover.go attaches a Block PVC as a
// device and any other as a mount (utils.PvcIsBlockMode). The two sides then
// speak different protocols and the source's mover exits failed after its
// retries. ready is false while either PVC is missing.
func (r *sources) volumeModes(ctx context.Context, rs *volsyncv1alpha1.ReplicationSource, rd *volsyncv1alpha1.ReplicationDestination, dst endpoint) (mismatch string, ready bool, err error) {
	name := rs.Spec.SourcePVC
	if ext := rs.Spec.External; ext != nil && ext.Parameters["volumeName"] != "" {
		name = ext.Parameters["volumeName"]
	}
	src := &corev1.PersistentVolumeClaim{}
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: name}, src); err != nil {
		return "", false, client.IgnoreNotFound(err)
	}
	dstPVC := &corev1.PersistentVolumeClaim{}
	if err := dst.client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: destinationPVC(rd)}, dstPVC); err != nil {
		return "", false, client.IgnoreNotFound(err)
	}
	sm, dm := modeOf(src), modeOf(dstPVC)
	if sm == dm {
		return "", true, nil
	}
	return fmt.Sprintf("source PVC %s is volumeMode %s, destination PVC %s is volumeMode %s\n"+
		"sync to %s failed: a %s source cannot be received into a %s destination", src.Name, sm, dstPVC.Name, dm, address(rs), sm, dm), true, nil
}

// modeOf is a PVC's volumeMode, Filesystem when unset (the API's default).
func modeOf(pvc *corev1.PersistentVolumeClaim) corev1.PersistentVolumeMode {
	return ptr.Deref(pvc.Spec.VolumeMode, corev1.PersistentVolumeFilesystem)
}

// address is where a source sends its data.
func address(rs *volsyncv1alpha1.ReplicationSource) string {
	if rs.Spec.RsyncTLS != nil {
		return ptr.Deref(rs.Spec.RsyncTLS.Address, "")
	}
	if rs.Spec.External != nil {
		return rs.Spec.External.Parameters["address"]
	}
	return ""
}
