package rgs

import (
	"context"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// poll is how often a cycle looks again at a step whose objects it does not
// watch (member snapshots, contents).
const poll = 2 * time.Second

// snapshot takes the cycle's VolumeGroupSnapshot and waits until it is ready.
func (r *Reconciler) snapshot(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.idle {
		return ctrl.Result{}, nil
	}
	vgs := &groupsnapshotv1.VolumeGroupSnapshot{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.rgs.Namespace, Name: s.cycle()}, vgs)
	if apierrors.IsNotFound(err) {
		vgs, err = r.takeSnapshot(ctx, s)
	}
	if err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonSnapshotFailed, err)
	}
	s.vgs = vgs
	if vgs.Status != nil && vgs.Status.Error != nil {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonSnapshotFailed, poll, "VolumeGroupSnapshot %s failed: %s", vgs.Name, ptr.Deref(vgs.Status.Error.Message, "no message"))
	}
	if vgs.Status == nil || !ptr.Deref(vgs.Status.ReadyToUse, false) {
		return ctrl.Result{}, flow.Waiting(ReasonSnapshotNotReady, poll, "VolumeGroupSnapshot %s is not ready to use", vgs.Name)
	}
	members, err := r.memberSnapshots(ctx, vgs)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.members = members
	if s.diff {
		return ctrl.Result{}, r.loadBase(ctx, s)
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) createSnapshot(ctx context.Context, s *scope) (*groupsnapshotv1.VolumeGroupSnapshot, error) {
	manual := ""
	if s.rgs.Spec.Trigger != nil {
		manual = s.rgs.Spec.Trigger.Manual
	}
	vgs := &groupsnapshotv1.VolumeGroupSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: s.cycle(), Namespace: s.rgs.Namespace,
			Labels:      map[string]string{volsync.RGSLabel: s.rgs.Name, drv1alpha1.VGSStatusLabel: drv1alpha1.VGSStatusCurrent},
			Annotations: map[string]string{volsync.ManualTriggerAnnotation: manual}},
		Spec: groupsnapshotv1.VolumeGroupSnapshotSpec{
			Source:                       groupsnapshotv1.VolumeGroupSnapshotSource{Selector: s.rgs.Spec.VolumeGroupSnapshotSource.DeepCopy()},
			VolumeGroupSnapshotClassName: ptr.To(s.rgs.Spec.VolumeGroupSnapshotClassName),
		},
	}
	if err := controllerutil.SetControllerReference(s.rgs, vgs, r.Client.Scheme()); err != nil {
		return nil, err
	}
	if err := r.Client.Create(ctx, vgs); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	s.events = append(s.events, flow.Event{Type: corev1.EventTypeNormal, Reason: "CycleStarted", Message: "took VolumeGroupSnapshot " + vgs.Name})
	return vgs, nil
}

// memberSnapshots maps each PVC of a ready group snapshot to its member
// VolumeSnapshot: the group content lists each member's volume handle and
// snapshot handle, the PVC's PV has the volume handle, and the member's content
// has the snapshot handle.
func (r *Reconciler) memberSnapshots(ctx context.Context, vgs *groupsnapshotv1.VolumeGroupSnapshot) (map[string]string, error) {
	content := &groupsnapshotv1.VolumeGroupSnapshotContent{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ptr.Deref(vgs.Status.BoundVolumeGroupSnapshotContentName, "")}, content); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, flow.Waiting(ReasonSnapshotNotReady, poll, "VolumeGroupSnapshotContent of %s not found", vgs.Name)
		}
		return nil, flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	if content.Status == nil {
		return nil, flow.Waiting(ReasonSnapshotNotReady, poll, "VolumeGroupSnapshotContent %s has no status", content.Name)
	}
	snapByVolume := map[string]string{}
	for _, info := range content.Status.VolumeSnapshotInfoList {
		snapByVolume[info.VolumeHandle] = info.SnapshotHandle
	}
	snaps := &snapshotv1.VolumeSnapshotList{}
	if err := r.Client.List(ctx, snaps, client.InNamespace(vgs.Namespace)); err != nil {
		return nil, flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	byHandle := map[string]string{}
	for _, vs := range snaps.Items {
		if vs.Status == nil || ptr.Deref(vs.Status.VolumeGroupSnapshotName, "") != vgs.Name || vs.Status.BoundVolumeSnapshotContentName == nil {
			continue
		}
		vsc := &snapshotv1.VolumeSnapshotContent{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: *vs.Status.BoundVolumeSnapshotContentName}, vsc); err != nil {
			return nil, flow.Transient(srv1alpha1.ReasonReadFailed, client.IgnoreNotFound(err))
		}
		if vsc.Status != nil && vsc.Status.SnapshotHandle != nil {
			byHandle[*vsc.Status.SnapshotHandle] = vs.Name
		}
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	sel, err := metav1.LabelSelectorAsSelector(vgs.Spec.Source.Selector)
	if err != nil {
		return nil, flow.Stalled(srv1alpha1.ReasonInvalidSpec, "%w", err)
	}
	if err := r.Client.List(ctx, pvcs, client.InNamespace(vgs.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	members := map[string]string{}
	for _, p := range pvcs.Items {
		if p.Spec.VolumeName == "" {
			continue
		}
		pv := &corev1.PersistentVolume{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: p.Spec.VolumeName}, pv); err != nil {
			return nil, flow.Transient(srv1alpha1.ReasonReadFailed, client.IgnoreNotFound(err))
		}
		if pv.Spec.CSI == nil {
			continue
		}
		handle, ok := snapByVolume[pv.Spec.CSI.VolumeHandle]
		if !ok {
			continue // not in this snapshot: created after it; the next cycle takes it
		}
		name, ok := byHandle[handle]
		if !ok {
			return nil, flow.Waiting(ReasonSnapshotNotReady, poll, "PVC %s: member snapshot of VolumeGroupSnapshot %s not found yet", p.Name, vgs.Name)
		}
		members[p.Name] = name
	}
	if len(members) == 0 {
		return nil, flow.Waiting(ReasonSnapshotNotReady, poll, "VolumeGroupSnapshot %s has no member snapshot of the group's PVCs", vgs.Name)
	}
	return members, nil
}

// loadBase finds the member snapshots of the previous cycle's snapshot, the
// base of an incremental sync. Without one every PVC syncs in full.
func (r *Reconciler) loadBase(ctx context.Context, s *scope) error {
	s.base = map[string]string{}
	previous, err := r.snapshots(ctx, s, drv1alpha1.VGSStatusPrevious)
	if err != nil {
		return flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	for i := len(previous) - 1; i >= 0; i-- {
		p := &previous[i]
		if p.Name == s.vgs.Name || p.Status == nil || !ptr.Deref(p.Status.ReadyToUse, false) {
			continue
		}
		base, err := r.memberSnapshots(ctx, p)
		if err != nil {
			return err
		}
		s.base = base
		return nil
	}
	return nil
}
