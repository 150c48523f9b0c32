package rgs

import (
	"context"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// schedule starts a cycle when one is due: trigger.manual differs from
// lastManualSync, or trigger.schedule fired since the last cycle started. A
// cycle already in progress continues; a snapshot labelled current that the
// status does not name yet (a restart right after creating it) is adopted.
func (r *Reconciler) schedule(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.cycle() != "" {
		return ctrl.Result{}, nil
	}
	due, res, err := r.due(s)
	if err != nil || !due {
		s.idle = true
		return res, err
	}
	current, err := r.snapshots(ctx, s, drv1alpha1.VGSStatusCurrent)
	if err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	name := s.rgs.Name + "-" + rand.String(5)
	for _, vgs := range current {
		// The last cycle's snapshot, deleted when it completed, stays until
		// the snapshot-controller has deleted its members; a new cycle
		// under its name would be taken for it.
		if vgs.DeletionTimestamp == nil {
			name = vgs.Name
			break
		}
	}
	s.rgs.Status.CurrentVolumeGroupSnapshot = name
	s.rgs.Status.LastSyncStartTime = &metav1.Time{Time: s.now}
	s.rgs.Status.NextSyncTime = nil
	return ctrl.Result{}, nil
}

// due reports whether a new cycle starts now, and when to look again if not.
func (r *Reconciler) due(s *scope) (bool, ctrl.Result, error) {
	t := s.rgs.Spec.Trigger
	if t == nil {
		return false, ctrl.Result{}, nil
	}
	if t.Manual != "" {
		return t.Manual != s.rgs.Status.LastManualSync, ctrl.Result{}, nil
	}
	if t.Schedule == nil {
		return false, ctrl.Result{}, nil
	}
	from := s.rgs.CreationTimestamp.Time
	if st := s.rgs.Status.LastSyncStartTime; st != nil {
		from = st.Time
	}
	next, err := volsync.NextRun(*t.Schedule, from)
	if err != nil {
		return false, ctrl.Result{}, flow.Stalled(srv1alpha1.ReasonInvalidSpec, "%w", err)
	}
	if s.rgs.Status.LastSyncStartTime == nil || !s.now.Before(next) {
		return true, ctrl.Result{}, nil
	}
	s.rgs.Status.NextSyncTime = &metav1.Time{Time: next}
	return false, flow.After(next.Sub(s.now)), nil
}

// snapshots lists the group's VolumeGroupSnapshots with a vgs-status label
// value, oldest first.
func (r *Reconciler) snapshots(ctx context.Context, s *scope, status string) ([]groupsnapshotv1.VolumeGroupSnapshot, error) {
	list := &groupsnapshotv1.VolumeGroupSnapshotList{}
	labels := client.MatchingLabels{volsync.RGSLabel: s.rgs.Name}
	if status != "" {
		labels[drv1alpha1.VGSStatusLabel] = status
	}
	if err := r.Client.List(ctx, list, client.InNamespace(s.rgs.Namespace), labels); err != nil {
		return nil, err
	}
	items := list.Items
	for i := 1; i < len(items); i++ {
		for j := i; j > 0 && items[j].CreationTimestamp.Before(&items[j-1].CreationTimestamp); j-- {
			items[j], items[j-1] = items[j-1], items[j]
		}
	}
	return items, nil
}
