package snapshot

import (
	"context"
	"fmt"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// contents plays the csi-snapshotter sidecar and the CSI driver for the
// VolumeSnapshotContents of Options.Driver
// (pkg/sidecar-controller/snapshot_controller.go, syncContent).
type contents struct {
	client client.Client
	reader client.Reader
	opts   Options
}

// Reconcile takes one content through the sidecar's steps: delete the
// storage snapshot of a content being deleted, cut the snapshot of a dynamic
// one, and report the status of a pre-provisioned one or a group member.
// holdRecheck is how often a held cut (Options.Hold) looks again.
const holdRecheck = 100 * time.Millisecond

func (r *contents) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &snapshotv1.VolumeSnapshotContent{}
	if err := r.reader.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The sidecar serves the contents of its own driver only (isDriverMatch).
	if c.Spec.Driver != r.opts.Driver {
		return ctrl.Result{}, nil
	}
	unbound := c.Spec.Source.SnapshotHandle != nil && c.Spec.VolumeSnapshotRef.UID == ""
	if shouldDelete(c.ObjectMeta, unbound, annBeingCreated, annBeingDeleted) {
		return ctrl.Result{}, r.delete(ctx, c)
	}
	if c.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // the snapshot-controller marks it being deleted first
	}
	_, member := c.Annotations[annGroupHandle]
	switch {
	// Dynamic: the snapshot-controller created the content from a claim's
	// volume; an earlier failure left a status without a handle, and the
	// sidecar then calls CreateSnapshot again.
	case c.Spec.Source.VolumeHandle != nil && !member && (c.Status == nil || c.Status.SnapshotHandle == nil):
		return r.create(ctx, c)
	// Ready contents are not asked about again (syncContent, contentIsReady).
	case c.Status != nil && ptr.Deref(c.Status.ReadyToUse, false):
		return ctrl.Result{}, nil
	// Pre-provisioned, or a group member that has its handles: the sidecar
	// asks the driver for the snapshot (checkandUpdateContentStatusOperation).
	case c.Spec.Source.SnapshotHandle != nil,
		member && c.Status != nil && c.Status.SnapshotHandle != nil && c.Status.VolumeGroupSnapshotHandle != nil:
		return r.check(ctx, c)
	}
	return ctrl.Result{}, nil
}

// create answers CreateSnapshot for a dynamic content, after Options.ReadyDelay
// from the content's creation: the blocks of the source volume are copied and
// the content gets the snapshot's handle, creation time, size and readiness
// (createSnapshotWrapper, updateSnapshotContentStatus).
func (r *contents) create(ctx context.Context, c *snapshotv1.VolumeSnapshotContent) (ctrl.Result, error) {
	// A dynamic snapshot needs its class (getCSISnapshotInput): the driver's
	// parameters come from it.
	className := ptr.Deref(c.Spec.VolumeSnapshotClassName, "")
	if className == "" {
		return r.fail(ctx, c, fmt.Sprintf("failed to take snapshot %s without a snapshot class", c.Name))
	}
	if err := r.reader.Get(ctx, client.ObjectKey{Name: className}, &snapshotv1.VolumeSnapshotClass{}); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("reading VolumeSnapshotClass %s: %w", className, err)
		}
		return r.fail(ctx, c, fmt.Sprintf("VolumeSnapshotClass %q not found", className))
	}
	if left := c.CreationTimestamp.Add(r.opts.ReadyDelay).Sub(r.opts.Clock.Now()); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	if r.opts.Hold != nil && r.opts.Hold() {
		return ctrl.Result{RequeueAfter: holdRecheck}, nil
	}
	src := *c.Spec.Source.VolumeHandle
	pv, err := volume(ctx, r.reader, src)
	if err != nil {
		return ctrl.Result{}, err
	}
	if pv == nil {
		// CSI CreateSnapshot: NOT_FOUND when the source volume does not exist.
		return r.fail(ctx, c, fmt.Sprintf("failed to take snapshot of the volume %s: source volume not found", src))
	}
	handle := snapshotID(c.Spec.VolumeSnapshotRef.UID)
	// The blocks are keyed by PV name, as the storage simulator keys them.
	if r.opts.Data != nil && !r.opts.Data.Exists(handle) {
		r.opts.Data.Copy(pv.Name, handle)
	}
	before := c.DeepCopy()
	if c.Status == nil {
		c.Status = &snapshotv1.VolumeSnapshotContentStatus{}
	}
	c.Status.SnapshotHandle = &handle
	c.Status.ReadyToUse = ptr.To(true)
	c.Status.CreationTime = ptr.To(r.opts.Clock.Now().UnixNano())
	c.Status.Error = nil
	// CSI reports size_bytes, the source volume's size; the sidecar leaves
	// restoreSize unset when it is 0.
	if size := pv.Spec.Capacity[corev1.ResourceStorage]; size.Value() > 0 {
		c.Status.RestoreSize = ptr.To(size.Value())
	}
	return ctrl.Result{}, r.patchStatus(ctx, c, before)
}

// check answers ListSnapshots for a content that names an existing snapshot
// (GetSnapshotStatus): found, it is ready with its size; missing, the content
// gets the error and the driver is asked again later.
func (r *contents) check(ctx context.Context, c *snapshotv1.VolumeSnapshotContent) (ctrl.Result, error) {
	handle := ptr.Deref(c.Spec.Source.SnapshotHandle, "")
	if handle == "" {
		handle = ptr.Deref(c.Status.SnapshotHandle, "")
	}
	found, err := findSnapshot(ctx, r.reader, r.opts.Data, handle, c.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if found == nil {
		res, err := r.fail(ctx, c, fmt.Sprintf("snapshot %s not found on the storage", handle))
		return res, err
	}
	before := c.DeepCopy()
	if c.Status == nil {
		c.Status = &snapshotv1.VolumeSnapshotContentStatus{}
	}
	// updateSnapshotContentStatus fills only what is missing.
	if c.Status.SnapshotHandle == nil {
		c.Status.SnapshotHandle = &handle
	}
	if c.Status.CreationTime == nil {
		c.Status.CreationTime = found.created
		if c.Status.CreationTime == nil {
			c.Status.CreationTime = ptr.To(r.opts.Clock.Now().UnixNano())
		}
	}
	if c.Status.RestoreSize == nil {
		c.Status.RestoreSize = found.size
	}
	c.Status.ReadyToUse = ptr.To(true)
	c.Status.Error = nil
	return ctrl.Result{}, r.patchStatus(ctx, c, before)
}

// delete is the sidecar's deletion (deleteCSISnapshotOperation,
// clearVolumeContentStatus, removeContentFinalizer): with policy Delete the
// storage snapshot goes and the status forgets it, unless it belongs to a
// group snapshot, whose deletion takes it; then the finalizer goes.
func (r *contents) delete(ctx context.Context, c *snapshotv1.VolumeSnapshotContent) error {
	if c.Spec.DeletionPolicy == snapshotv1.VolumeSnapshotContentDelete && c.Status != nil &&
		c.Status.SnapshotHandle != nil && c.Status.VolumeGroupSnapshotHandle == nil {
		if r.opts.Data != nil {
			r.opts.Data.Delete(*c.Status.SnapshotHandle)
		}
		before := c.DeepCopy()
		c.Status.SnapshotHandle, c.Status.ReadyToUse, c.Status.CreationTime, c.Status.RestoreSize = nil, nil, nil, nil
		if err := r.patchStatus(ctx, c, before); err != nil {
			return err
		}
	}
	if !controllerutil.ContainsFinalizer(c, contentFinalizer) {
		return nil
	}
	before := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, contentFinalizer)
	if err := r.client.Patch(ctx, c, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer of VolumeSnapshotContent %s: %w", c.Name, err)
	}
	return nil
}

// fail records a failed CSI call on the content, not ready, and asks again
// after ReadyPoll, as the sidecar's rate-limited requeue does.
func (r *contents) fail(ctx context.Context, c *snapshotv1.VolumeSnapshotContent, msg string) (ctrl.Result, error) {
	if c.Status != nil && sameError(c.Status.Error, msg) {
		return ctrl.Result{RequeueAfter: ReadyPoll}, nil
	}
	before := c.DeepCopy()
	if c.Status == nil {
		c.Status = &snapshotv1.VolumeSnapshotContentStatus{}
	}
	c.Status.ReadyToUse = ptr.To(false)
	c.Status.Error = errorStatus(r.opts.Clock.Now(), msg)
	return ctrl.Result{RequeueAfter: ReadyPoll}, r.patchStatus(ctx, c, before)
}

func (r *contents) patchStatus(ctx context.Context, c, before *snapshotv1.VolumeSnapshotContent) error {
	if err := r.client.Status().Patch(ctx, c, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("writing the status of VolumeSnapshotContent %s: %w", c.Name, err)
	}
	return nil
}
