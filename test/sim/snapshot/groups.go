package snapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// groups plays the csi-snapshotter sidecar and the CSI driver for the
// VolumeGroupSnapshotContents of Options.Driver
// (pkg/sidecar-controller/groupsnapshot_helper.go, syncGroupSnapshotContent).
// The member VolumeSnapshots and their contents are the snapshot-controller's
// to create from the group content's status.
type groups struct {
	client client.Client
	reader client.Reader
	opts   Options
}

// Reconcile takes one group content through the sidecar's steps.
func (r *groups) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	g := &groupsnapshotv1.VolumeGroupSnapshotContent{}
	if err := r.reader.Get(ctx, req.NamespacedName, g); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if g.Spec.Driver != r.opts.Driver {
		return ctrl.Result{}, nil
	}
	unbound := g.Spec.Source.GroupSnapshotHandles != nil && g.Spec.VolumeGroupSnapshotRef.UID == ""
	if shouldDelete(g.ObjectMeta, unbound, annGroupBeingCreated, annGroupBeingDeleted) {
		return ctrl.Result{}, r.delete(ctx, g)
	}
	if g.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	switch {
	case len(g.Spec.Source.VolumeHandles) > 0 && (g.Status == nil || g.Status.VolumeGroupSnapshotHandle == nil):
		return r.create(ctx, g)
	case g.Status != nil && ptr.Deref(g.Status.ReadyToUse, false):
		return ctrl.Result{}, nil
	case g.Spec.Source.GroupSnapshotHandles != nil:
		return r.check(ctx, g)
	}
	return ctrl.Result{}, nil
}

// create answers CreateVolumeGroupSnapshot after Options.ReadyDelay: every
// volume's blocks are copied at one point in time, and the status lists each
// volume's snapshot (createGroupSnapshotWrapper, updateGroupSnapshotContentStatus).
func (r *groups) create(ctx context.Context, g *groupsnapshotv1.VolumeGroupSnapshotContent) (ctrl.Result, error) {
	className := ptr.Deref(g.Spec.VolumeGroupSnapshotClassName, "")
	if className == "" {
		return r.fail(ctx, g, fmt.Sprintf("failed to take group snapshot %s without a group snapshot class", g.Name))
	}
	if err := r.reader.Get(ctx, client.ObjectKey{Name: className}, &groupsnapshotv1.VolumeGroupSnapshotClass{}); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("reading VolumeGroupSnapshotClass %s: %w", className, err)
		}
		return r.fail(ctx, g, fmt.Sprintf("VolumeGroupSnapshotClass %q not found", className))
	}
	// The sidecar names the group snapshot after its VolumeGroupSnapshot and
	// refuses a content bound to none (csi_handler.go, CreateGroupSnapshot).
	uid := g.Spec.VolumeGroupSnapshotRef.UID
	if uid == "" {
		return r.fail(ctx, g, fmt.Sprintf("cannot create group snapshot. Group snapshot content %s not bound to a group snapshot", g.Name))
	}
	if left := g.CreationTimestamp.Add(r.opts.ReadyDelay).Sub(r.opts.Clock.Now()); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	pvs := make([]*corev1.PersistentVolume, len(g.Spec.Source.VolumeHandles))
	for i, h := range g.Spec.Source.VolumeHandles {
		pv, err := volume(ctx, r.reader, h)
		if err != nil {
			return ctrl.Result{}, err
		}
		if pv == nil {
			return r.fail(ctx, g, fmt.Sprintf("failed to take group snapshot of the volumes %v: volume %s not found", g.Spec.Source.VolumeHandles, h))
		}
		pvs[i] = pv
	}
	now := r.opts.Clock.Now()
	copies := map[string]string{}
	infos := make([]groupsnapshotv1.VolumeSnapshotInfo, len(pvs))
	for i, pv := range pvs {
		handle := memberSnapshotID(uid, i)
		copies[pv.Name] = handle
		infos[i] = groupsnapshotv1.VolumeSnapshotInfo{VolumeHandle: g.Spec.Source.VolumeHandles[i], SnapshotHandle: handle,
			CreationTime: ptr.To(now.UnixNano()), ReadyToUse: ptr.To(true)}
		if size := pv.Spec.Capacity[corev1.ResourceStorage]; size.Value() > 0 {
			infos[i].RestoreSize = ptr.To(size.Value())
		}
	}
	// One CopyGroup: the members are consistent with each other. A retry
	// after a failed status write finds the copies made.
	if r.opts.Data != nil && !r.opts.Data.Exists(infos[0].SnapshotHandle) {
		r.opts.Data.CopyGroup(copies)
	}
	if err := copyImages(r.opts.DeviceDir, copies); err != nil {
		return ctrl.Result{}, err
	}
	before := g.DeepCopy()
	if g.Status == nil {
		g.Status = &groupsnapshotv1.VolumeGroupSnapshotContentStatus{}
	}
	g.Status.VolumeGroupSnapshotHandle = ptr.To(groupSnapshotID(uid))
	g.Status.CreationTime = ptr.To(metav1.NewTime(now))
	g.Status.ReadyToUse = ptr.To(true)
	g.Status.Error = nil
	g.Status.VolumeSnapshotInfoList = infos
	return ctrl.Result{}, r.patchStatus(ctx, g, before)
}

// check answers GetVolumeGroupSnapshot for a pre-provisioned group content:
// ready once every member snapshot it names exists.
func (r *groups) check(ctx context.Context, g *groupsnapshotv1.VolumeGroupSnapshotContent) (ctrl.Result, error) {
	handles := g.Spec.Source.GroupSnapshotHandles
	for _, h := range handles.VolumeSnapshotHandles {
		found, err := findSnapshot(ctx, r.reader, r.opts.Data, h, "")
		if err != nil {
			return ctrl.Result{}, err
		}
		if found == nil {
			return r.fail(ctx, g, fmt.Sprintf("snapshot %s of group snapshot %s not found on the storage", h, handles.VolumeGroupSnapshotHandle))
		}
	}
	before := g.DeepCopy()
	if g.Status == nil {
		g.Status = &groupsnapshotv1.VolumeGroupSnapshotContentStatus{}
	}
	if g.Status.VolumeGroupSnapshotHandle == nil {
		g.Status.VolumeGroupSnapshotHandle = ptr.To(handles.VolumeGroupSnapshotHandle)
	}
	if g.Status.CreationTime == nil {
		g.Status.CreationTime = ptr.To(metav1.NewTime(r.opts.Clock.Now()))
	}
	g.Status.ReadyToUse = ptr.To(true)
	g.Status.Error = nil
	return ctrl.Result{}, r.patchStatus(ctx, g, before)
}

// delete is the sidecar's group deletion (deleteCSIGroupSnapshotOperation,
// clearGroupSnapshotContentStatus, removeGroupSnapshotContentFinalizer): with
// policy Delete every member snapshot goes with the group, since the members'
// own contents never delete theirs; then the finalizer goes.
func (r *groups) delete(ctx context.Context, g *groupsnapshotv1.VolumeGroupSnapshotContent) error {
	if g.Spec.DeletionPolicy == snapshotv1.VolumeSnapshotContentDelete && g.Status != nil && g.Status.VolumeGroupSnapshotHandle != nil {
		if r.opts.Data != nil {
			for _, h := range memberHandles(g) {
				r.opts.Data.Delete(h)
			}
		}
		before := g.DeepCopy()
		g.Status.VolumeGroupSnapshotHandle, g.Status.ReadyToUse, g.Status.CreationTime, g.Status.Error = nil, nil, nil, nil
		if err := r.patchStatus(ctx, g, before); err != nil {
			return err
		}
	}
	if !controllerutil.ContainsFinalizer(g, groupContentFinalizer) {
		return nil
	}
	before := g.DeepCopy()
	controllerutil.RemoveFinalizer(g, groupContentFinalizer)
	if err := r.client.Patch(ctx, g, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer of VolumeGroupSnapshotContent %s: %w", g.Name, err)
	}
	return nil
}

// memberHandles are the snapshots a group deletion removes: the status's
// list for a dynamic group, the spec's for a pre-provisioned one.
func memberHandles(g *groupsnapshotv1.VolumeGroupSnapshotContent) []string {
	var out []string
	for _, info := range g.Status.VolumeSnapshotInfoList {
		out = append(out, info.SnapshotHandle)
	}
	if len(out) == 0 && g.Spec.Source.GroupSnapshotHandles != nil {
		out = append(out, g.Spec.Source.GroupSnapshotHandles.VolumeSnapshotHandles...)
	}
	return out
}

// fail records a failed CSI call on the group content
// (updateGroupSnapshotContentErrorStatusWithEvent) and asks again later.
func (r *groups) fail(ctx context.Context, g *groupsnapshotv1.VolumeGroupSnapshotContent, msg string) (ctrl.Result, error) {
	if g.Status != nil && sameError(g.Status.Error, msg) {
		return ctrl.Result{RequeueAfter: ReadyPoll}, nil
	}
	before := g.DeepCopy()
	if g.Status == nil {
		g.Status = &groupsnapshotv1.VolumeGroupSnapshotContentStatus{}
	}
	g.Status.ReadyToUse = ptr.To(false)
	g.Status.Error = errorStatus(r.opts.Clock.Now(), msg)
	return ctrl.Result{RequeueAfter: ReadyPoll}, r.patchStatus(ctx, g, before)
}

func (r *groups) patchStatus(ctx context.Context, g, before *groupsnapshotv1.VolumeGroupSnapshotContent) error {
	if err := r.client.Status().Patch(ctx, g, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("writing the status of VolumeGroupSnapshotContent %s: %w", g.Name, err)
	}
	return nil
}

// copyImages copies each volume's bytes in dir (PV name to snapshot handle),
// one after the other with nothing between: the CSI driver's group point.
// A retry after a failed status write finds the copies made.
func copyImages(dir string, pvToHandle map[string]string) error {
	if dir == "" {
		return nil
	}
	for pv, handle := range pvToHandle {
		if _, err := os.Stat(ImageFile(dir, handle)); err == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, pv))
		if err != nil {
			return fmt.Errorf("reading the bytes of volume %s: %w", pv, err)
		}
		if err := os.WriteFile(ImageFile(dir, handle), b, 0o600); err != nil {
			return fmt.Errorf("writing snapshot %s: %w", handle, err)
		}
	}
	return nil
}
