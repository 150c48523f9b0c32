package rgs

import (
	"context"
	"fmt"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// complete ends a synced cycle: the restored PVCs go; in diff mode the older
// snapshots go and the cycle's becomes previous, the base of the next one,
// otherwise every snapshot of the group goes. Each step is idempotent, so a
// restart in the middle repeats the cleanup and then records the cycle.
func (r *Reconciler) complete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.idle {
		return ctrl.Result{}, nil
	}
	if err := r.deleteRestored(ctx, s); err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonCleanupFailed, err)
	}
	all, err := r.snapshots(ctx, s, "")
	if err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	for i := range all {
		vgs := &all[i]
		if s.diff && vgs.Name == s.vgs.Name {
			continue
		}
		if err := r.Client.Delete(ctx, vgs); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonCleanupFailed, fmt.Errorf("deleting VolumeGroupSnapshot %s: %w", vgs.Name, err))
		}
	}
	s.rgs.Status.PreviousVolumeGroupSnapshot = ""
	if s.diff {
		if err := r.markPrevious(ctx, s.vgs); err != nil {
			return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonCleanupFailed, err)
		}
		s.rgs.Status.PreviousVolumeGroupSnapshot = s.vgs.Name
	}
	start := s.now
	if st := s.rgs.Status.LastSyncStartTime; st != nil {
		start = st.Time
	}
	st := &s.rgs.Status
	st.LastSyncTime = &metav1.Time{Time: s.now}
	st.LastSyncDuration = &metav1.Duration{Duration: s.now.Sub(start)}
	st.LastManualSync = s.vgs.Annotations[volsync.ManualTriggerAnnotation]
	st.CurrentVolumeGroupSnapshot = ""
	s.events = append(s.events, flow.Event{Type: corev1.EventTypeNormal, Reason: "CycleComplete",
		Message: fmt.Sprintf("synced %d PVCs from VolumeGroupSnapshot %s in %s", len(s.members), s.vgs.Name, st.LastSyncDuration.Duration)})
	s.idle = true
	due, res, err := r.due(s)
	if due {
		// A manual trigger moved on during the cycle: start the next one now.
		return flow.After(time.Millisecond), nil
	}
	return res, err
}

func (r *Reconciler) markPrevious(ctx context.Context, vgs *groupsnapshotv1.VolumeGroupSnapshot) error {
	if vgs.Labels[drv1alpha1.VGSStatusLabel] == drv1alpha1.VGSStatusPrevious {
		return nil
	}
	before := vgs.DeepCopy()
	vgs.Labels[drv1alpha1.VGSStatusLabel] = drv1alpha1.VGSStatusPrevious
	return client.IgnoreNotFound(r.Client.Patch(ctx, vgs, client.MergeFrom(before)))
}

func (r *Reconciler) deleteRestored(ctx context.Context, s *scope) error {
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.rgs.Namespace), client.MatchingLabels{volsync.RGSLabel: s.rgs.Name}); err != nil {
		return err
	}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp != nil {
			continue
		}
		if err := r.Client.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
