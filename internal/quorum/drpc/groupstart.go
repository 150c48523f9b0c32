package drpc

import (
	"context"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
)

// groupStartGrace bounds how long a global group's action waits for every peer
// to record consensus: a peer that cannot write its status does not hold the
// others for longer.
const groupStartGrace = 5 * time.Second

// awaitGroupStart holds the first step of a global group's action until every
// peer has recorded consensus (its GlobalAction condition True for its current
// generation), or until groupStartGrace after this DRPC's action started.
//
// Nothing is lost by waiting: the VRGs of a global group change state on a
// cluster only together (the GlobalState consensus), so a peer that
// starts first only waits there. And much is won when a whole group agrees at
// once: the consensus writes of the last peers do not compete with the VRG
// writes of the first ones. The wait writes nothing; the last peer to record
// consensus wakes the group (groupStarted).
func (r *Reconciler) awaitGroupStart(ctx context.Context, s *scope) (time.Duration, error) {
	label, started := s.globalVGR(), s.drpc.Status.ActionStartTime
	if label == "" || started == nil {
		return 0, nil
	}
	left := groupStartGrace - s.now.Sub(started.Time)
	if left <= 0 {
		return 0, nil
	}
	all, err := r.groupRecordedConsensus(ctx, s.drpc.Namespace, label)
	if err != nil || all {
		return 0, err
	}
	return left, nil
}

// groupRecordedConsensus reports whether every DRPC with the label, but those
// being deleted, has recorded consensus. It asks the cache's index for one
// DRPC that has not, rather than reading the whole group: every peer of a
// group that agrees at once asks this when it records, and a read of the
// whole group each time made that work grow with the square of its size.
func (r *Reconciler) groupRecordedConsensus(ctx context.Context, namespace, label string) (bool, error) {
	unrecorded := &drv1alpha1.DRPlacementControlList{}
	if err := r.Client.List(ctx, unrecorded, client.InNamespace(namespace), client.MatchingFields{unrecordedIndex: label},
		client.Limit(1), client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	return len(unrecorded.Items) == 0, nil
}

// recordedConsensus: the DRPC's GlobalAction is True for its current spec.
func recordedConsensus(d *drv1alpha1.DRPlacementControl) bool {
	c := meta.FindStatusCondition(d.Status.Conditions, drv1alpha1.ConditionGlobalAction)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == d.Generation
}

// consensusRecorded selects the updates in which a labelled DRPC records
// consensus.
func consensusRecorded() predicate.Funcs {
	return drpcUpdates(recordsConsensus)
}

// recordsConsensus: n is a labelled DRPC that records consensus o had not.
func recordsConsensus(o, n *drv1alpha1.DRPlacementControl) bool {
	return n.Labels[drv1alpha1.GlobalVGRLabel] != "" && !recordedConsensus(o) && recordedConsensus(n)
}

// decisionWritten selects the status update in which a labelled DRPC records
// its consensus and the start of its action at once: the write that ends its
// decision (place). The DRPC itself need not be woken by that write, and is
// not (the For predicate of SetupWithManager): groupStarted sees the same
// update and wakes the whole group if this DRPC was the last to record, and
// otherwise the DRPC would only wait for its peers, with a reconcile after
// groupStartGrace asked for by the reconcile that wrote the decision. When a
// whole group agrees at once, that is one reconcile less per peer while the
// last of them are still writing.
func decisionWritten() predicate.Funcs {
	return drpcUpdates(func(o, n *drv1alpha1.DRPlacementControl) bool {
		return recordsConsensus(o, n) && statusOnly(o, n) &&
			n.Status.ActionStartTime != nil && !n.Status.ActionStartTime.Equal(o.Status.ActionStartTime)
	})
}

// drpcUpdates selects the DRPC updates for which match holds, and no other
// event.
func drpcUpdates(match func(o, n *drv1alpha1.DRPlacementControl) bool) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*drv1alpha1.DRPlacementControl)
			n, ok2 := e.ObjectNew.(*drv1alpha1.DRPlacementControl)
			return ok1 && ok2 && match(o, n)
		},
	}
}

// statusOnly: nothing but the status (and the resource version) differs
// between the two versions of a DRPC.
func statusOnly(o, n *drv1alpha1.DRPlacementControl) bool {
	return o.Generation == n.Generation && n.DeletionTimestamp.IsZero() && o.DeletionTimestamp.IsZero() &&
		maps.Equal(o.Labels, n.Labels) && maps.Equal(o.Annotations, n.Annotations) && slices.Equal(o.Finalizers, n.Finalizers)
}

// groupStarted wakes a whole group when its last member records consensus. The
// informer hands events over in order, after updating its cache, so the event
// of the last member sees every other member's record.
func (r *Reconciler) groupStarted(ctx context.Context, obj client.Object) []reconcile.Request {
	label := obj.GetLabels()[drv1alpha1.GlobalVGRLabel]
	if all, err := r.groupRecordedConsensus(ctx, obj.GetNamespace(), label); err != nil || !all {
		return nil
	}
	return r.drpcsBy(ctx, obj.GetNamespace(), globalVGRIndex, label, "")
}
