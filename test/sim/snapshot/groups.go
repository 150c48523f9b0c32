package snapshot

import (
	"context"
	"fmt"
	"sort"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GroupLabel on a member VolumeSnapshot names its VolumeGroupSnapshot, so that
// the simulator can delete the members with the group (envtest runs no garbage
// collector to follow the owner references).
const GroupLabel = "sim.snapshot.siterecovery.io/group"

type groups struct {
	client client.Client
	reader client.Reader
	opts   Options
}

// Reconcile takes one VolumeGroupSnapshot: after Options.ReadyDelay every PVC its
// selector matches gets a member VolumeSnapshot, all taken at one point in time;
// the group content lists each member's volume and snapshot handle.
func (r *groups) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vgs := &groupsnapshotv1.VolumeGroupSnapshot{}
	if err := r.reader.Get(ctx, req.NamespacedName, vgs); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.deleteMembers(ctx, req.Namespace, req.Name)
		}
		return ctrl.Result{}, err
	}
	if vgs.DeletionTimestamp != nil || (vgs.Status != nil && ptr.Deref(vgs.Status.ReadyToUse, false)) {
		return ctrl.Result{}, nil
	}
	if left := vgs.CreationTimestamp.Add(r.opts.ReadyDelay).Sub(r.opts.Clock.Now()); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	className := ptr.Deref(vgs.Spec.VolumeGroupSnapshotClassName, "")
	if err := r.reader.Get(ctx, client.ObjectKey{Name: className}, &groupsnapshotv1.VolumeGroupSnapshotClass{}); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: ReadyPoll}, r.setError(ctx, vgs, fmt.Sprintf("VolumeGroupSnapshotClass %q not found", className))
	}
	pvcs, err := r.members(ctx, vgs)
	if err != nil || pvcs == nil {
		return ctrl.Result{RequeueAfter: ReadyPoll}, err
	}
	return ctrl.Result{}, r.take(ctx, vgs, pvcs)
}

// members are the bound PVCs the selector matches, sorted by name; nil while
// one of them is not bound yet.
func (r *groups) members(ctx context.Context, vgs *groupsnapshotv1.VolumeGroupSnapshot) ([]corev1.PersistentVolumeClaim, error) {
	sel, err := metav1.LabelSelectorAsSelector(vgs.Spec.Source.Selector)
	if err != nil {
		return nil, err
	}
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.reader.List(ctx, list, client.InNamespace(vgs.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	for _, p := range list.Items {
		if p.Status.Phase != corev1.ClaimBound {
			return nil, nil
		}
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// take copies the members' data at one point in time, then creates the
// contents and member snapshots, each ready.
func (r *groups) take(ctx context.Context, vgs *groupsnapshotv1.VolumeGroupSnapshot, pvcs []corev1.PersistentVolumeClaim) error {
	now := metav1.NewTime(r.opts.Clock.Now())
	handles := make([]string, len(pvcs))
	copies := map[string]string{}
	for i, p := range pvcs {
		handles[i] = fmt.Sprintf("snap-%s-%d", vgs.UID, i)
		copies[p.Spec.VolumeName] = handles[i]
	}
	if r.opts.Data != nil && len(handles) > 0 && !r.opts.Data.Exists(handles[0]) {
		r.opts.Data.CopyGroup(copies)
	}
	infos := make([]groupsnapshotv1.VolumeSnapshotInfo, 0, len(pvcs))
	for i := range pvcs {
		info, err := r.member(ctx, vgs, &pvcs[i], handles[i], now)
		if err != nil {
			return err
		}
		infos = append(infos, info)
	}
	content := &groupsnapshotv1.VolumeGroupSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "groupsnapcontent-" + string(vgs.UID)},
		Spec: groupsnapshotv1.VolumeGroupSnapshotContentSpec{
			VolumeGroupSnapshotRef: corev1.ObjectReference{Kind: "VolumeGroupSnapshot", APIVersion: groupsnapshotv1.SchemeGroupVersion.String(),
				Namespace: vgs.Namespace, Name: vgs.Name, UID: vgs.UID},
			DeletionPolicy:               snapshotv1.VolumeSnapshotContentDelete,
			Driver:                       r.opts.Driver,
			VolumeGroupSnapshotClassName: vgs.Spec.VolumeGroupSnapshotClassName,
			Source:                       groupsnapshotv1.VolumeGroupSnapshotContentSource{GroupSnapshotHandles: &groupsnapshotv1.GroupSnapshotHandles{VolumeGroupSnapshotHandle: "group-" + string(vgs.UID), VolumeSnapshotHandles: handles}},
		},
	}
	if err := r.createOrRead(ctx, content); err != nil {
		return err
	}
	content.Status = &groupsnapshotv1.VolumeGroupSnapshotContentStatus{
		VolumeGroupSnapshotHandle: ptr.To("group-" + string(vgs.UID)), CreationTime: &now,
		ReadyToUse: ptr.To(true), VolumeSnapshotInfoList: infos,
	}
	if err := r.client.Status().Update(ctx, content); client.IgnoreNotFound(err) != nil {
		return err
	}
	vgs.Status = &groupsnapshotv1.VolumeGroupSnapshotStatus{
		BoundVolumeGroupSnapshotContentName: &content.Name, CreationTime: &now, ReadyToUse: ptr.To(true),
	}
	return client.IgnoreNotFound(r.client.Status().Update(ctx, vgs))
}

// member creates one member snapshot and its content, both ready.
func (r *groups) member(ctx context.Context, vgs *groupsnapshotv1.VolumeGroupSnapshot, pvc *corev1.PersistentVolumeClaim, handle string, now metav1.Time) (groupsnapshotv1.VolumeSnapshotInfo, error) {
	pv := &corev1.PersistentVolume{}
	if err := r.reader.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return groupsnapshotv1.VolumeSnapshotInfo{}, err
	}
	volumeHandle := pvc.Spec.VolumeName
	if pv.Spec.CSI != nil {
		volumeHandle = pv.Spec.CSI.VolumeHandle
	}
	size := pvc.Status.Capacity[corev1.ResourceStorage]
	if size.IsZero() {
		size = pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	name := fmt.Sprintf("%s-%s", vgs.Name, pvc.Name)
	contentName := "snapcontent-" + handle
	content := &snapshotv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: contentName},
		Spec: snapshotv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Kind: "VolumeSnapshot", APIVersion: snapshotv1.SchemeGroupVersion.String(), Namespace: vgs.Namespace, Name: name},
			DeletionPolicy:    snapshotv1.VolumeSnapshotContentDelete,
			Driver:            r.opts.Driver,
			Source:            snapshotv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To(handle)},
		},
	}
	if err := r.createOrRead(ctx, content); err != nil {
		return groupsnapshotv1.VolumeSnapshotInfo{}, err
	}
	content.Status = &snapshotv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To(handle), ReadyToUse: ptr.To(true),
		RestoreSize: ptr.To(size.Value()), CreationTime: ptr.To(now.UnixNano()), VolumeGroupSnapshotHandle: ptr.To("group-" + string(vgs.UID))}
	if err := r.client.Status().Update(ctx, content); client.IgnoreNotFound(err) != nil {
		return groupsnapshotv1.VolumeSnapshotInfo{}, err
	}
	vs := &snapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: vgs.Namespace, Labels: map[string]string{GroupLabel: vgs.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: groupsnapshotv1.SchemeGroupVersion.String(), Kind: "VolumeGroupSnapshot", Name: vgs.Name, UID: vgs.UID}}},
		Spec: snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{VolumeSnapshotContentName: &contentName}},
	}
	if err := r.client.Create(ctx, vs); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return groupsnapshotv1.VolumeSnapshotInfo{}, err
		}
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(vs), vs); err != nil {
			return groupsnapshotv1.VolumeSnapshotInfo{}, err
		}
	}
	vs.Status = &snapshotv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: &contentName, ReadyToUse: ptr.To(true),
		RestoreSize: resource.NewQuantity(size.Value(), resource.BinarySI), CreationTime: &now, VolumeGroupSnapshotName: &vgs.Name}
	if err := r.client.Status().Update(ctx, vs); err != nil {
		return groupsnapshotv1.VolumeSnapshotInfo{}, err
	}
	return groupsnapshotv1.VolumeSnapshotInfo{VolumeHandle: volumeHandle, SnapshotHandle: handle, ReadyToUse: ptr.To(true),
		RestoreSize: ptr.To(size.Value()), CreationTime: ptr.To(now.UnixNano())}, nil
}

// createOrRead creates obj, or reads the one an earlier attempt created (a
// retry after a conflict further on), so that its status can be updated.
func (r *groups) createOrRead(ctx context.Context, obj client.Object) error {
	err := r.client.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	return r.reader.Get(ctx, client.ObjectKeyFromObject(obj), obj)
}

func (r *groups) setError(ctx context.Context, vgs *groupsnapshotv1.VolumeGroupSnapshot, msg string) error {
	if vgs.Status != nil && vgs.Status.Error != nil && ptr.Deref(vgs.Status.Error.Message, "") == msg {
		return nil
	}
	vgs.Status = &groupsnapshotv1.VolumeGroupSnapshotStatus{ReadyToUse: ptr.To(false),
		Error: &snapshotv1.VolumeSnapshotError{Time: ptr.To(metav1.NewTime(r.opts.Clock.Now())), Message: &msg}}
	return client.IgnoreNotFound(r.client.Status().Update(ctx, vgs))
}

// deleteMembers deletes the member snapshots and the group content of a
// deleted group snapshot, as the snapshot-controller does.
func (r *groups) deleteMembers(ctx context.Context, namespace, name string) error {
	list := &snapshotv1.VolumeSnapshotList{}
	if err := r.reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{GroupLabel: name}); err != nil {
		return err
	}
	for i := range list.Items {
		if err := r.client.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	contents := &groupsnapshotv1.VolumeGroupSnapshotContentList{}
	if err := r.reader.List(ctx, contents); err != nil {
		return err
	}
	for i := range contents.Items {
		ref := contents.Items[i].Spec.VolumeGroupSnapshotRef
		if ref.Namespace == namespace && ref.Name == name {
			if err := r.client.Delete(ctx, &contents.Items[i]); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}
