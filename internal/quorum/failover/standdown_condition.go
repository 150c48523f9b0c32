package failover

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// The stand-down's state lives in the group's StoodDown condition, not in
// the controller's memory, so that a restarted quorum-manager knows it. The
// condition is the only part of the quorum group's status this controller
// writes; pg-sync writes Synced and status.clusters there, and the failover
// controller status.history. Each write is a merge patch carrying the
// resourceVersion the group was read with: a write from a stale read
// conflicts and is retried on a fresh one, instead of putting back a
// conditions list another writer has changed since.

// standingDown sets StoodDown False, saying what the stand-down waits for.
func (r *StandDown) standingDown(ctx context.Context, g *srv1alpha1.ProtectionGroup, waits string) error {
	_, err := r.setCondition(ctx, g, &metav1.Condition{Type: srv1alpha1.ConditionStoodDown, Status: metav1.ConditionFalse,
		Reason: srv1alpha1.ReasonStandingDown, Message: waits})
	return err
}

// stoodDown sets StoodDown True, with the way back in its message. The
// Normal event goes with the write that turns it True: once, also across a
// restart, which finds the condition True already.
func (r *StandDown) stoodDown(ctx context.Context, g *srv1alpha1.ProtectionGroup, fenced string) error {
	msg := fmt.Sprintf("%s stood down: group %s is stopped there and its DRBD replicas are Secondary, disconnected from %s, where the group runs. ",
		fenced, g.Name, g.Spec.ActiveCluster)
	switch {
	case g.Annotations[srv1alpha1.FencedOffByAnnotation] == "":
		msg += fmt.Sprintf("It does not rejoin by itself, because rejoining discards the writes made on %s while it was fenced off; to rejoin it, fail back with a planned FailoverRequest to %s annotated %s=%s",
			fenced, fenced, srv1alpha1.DiscardDivergedAnnotation, g.Name)
	case g.Annotations[srv1alpha1.HoldDivergedAnnotation] == "true":
		msg += fmt.Sprintf("%s=true keeps the writes made there while it was fenced off (see the Diverged condition); remove the annotation, with %s=%s in the same write, to discard them and resync it, or fail back with a planned FailoverRequest to %s annotated %s=%s",
			srv1alpha1.HoldDivergedAnnotation, srv1alpha1.ConfirmAnnotation, g.Name, fenced, srv1alpha1.DiscardDivergedAnnotation, g.Name)
	default:
		msg += "The writes made there while it was fenced off are discarded and it resyncs from the active cluster (see the Diverged condition)"
	}
	was := meta.FindStatusCondition(g.Status.Conditions, srv1alpha1.ConditionStoodDown)
	wasTrue := was != nil && was.Status == metav1.ConditionTrue
	wrote, err := r.setCondition(ctx, g, &metav1.Condition{Type: srv1alpha1.ConditionStoodDown, Status: metav1.ConditionTrue,
		Reason: srv1alpha1.ReasonStoodDown, Message: msg})
	if err == nil && wrote && !wasTrue {
		r.Recorder.Event(g, "Normal", srv1alpha1.ReasonStoodDown, msg)
	}
	return err
}

// setDiverged writes the group's Diverged condition.
func (r *StandDown) setDiverged(ctx context.Context, g *srv1alpha1.ProtectionGroup, status metav1.ConditionStatus, reason, msg string) error {
	_, err := r.setCondition(ctx, g, &metav1.Condition{Type: srv1alpha1.ConditionDiverged, Status: status, Reason: reason, Message: msg})
	return err
}

// setDivergence reports a divergence: status.divergence and the Diverged
// condition, True, in one write.
func (r *StandDown) setDivergence(ctx context.Context, g *srv1alpha1.ProtectionGroup, div *srv1alpha1.GroupDivergence, reason, msg string) error {
	_, err := r.patchStatus(ctx, g, func(st *srv1alpha1.ProtectionGroupStatus) {
		st.Divergence = div
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: srv1alpha1.ConditionDiverged, Status: metav1.ConditionTrue,
			Reason: reason, Message: msg, ObservedGeneration: g.Generation})
	})
	return err
}

// rejoinWaits puts what the rejoin waits for after the divergence report in
// the Diverged condition, so that a rejoin that cannot go on says why.
func (r *StandDown) rejoinWaits(ctx context.Context, g *srv1alpha1.ProtectionGroup, waits string) error {
	c := meta.FindStatusCondition(g.Status.Conditions, srv1alpha1.ConditionDiverged)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil // no report yet: the condition says what is measured
	}
	return r.setDiverged(ctx, g, c.Status, c.Reason, divergedMessage(g, g.Status.Divergence)+rejoinNow+waits)
}

// rejoinNow separates the divergence report from the rejoin's progress.
const rejoinNow = ". Now: "

// endStandDown removes StoodDown once the group records no fenced-off
// cluster, and ends a divergence still reported as under way.
func (r *StandDown) endStandDown(ctx context.Context, g *srv1alpha1.ProtectionGroup) error {
	if c := meta.FindStatusCondition(g.Status.Conditions, srv1alpha1.ConditionDiverged); c != nil && c.Status != metav1.ConditionFalse {
		msg := "the group records no fenced-off cluster any more: a failback rejoined it, or the record was removed by hand"
		if report := divergedReport(g, g.Status.Divergence); report != "" {
			msg += " (" + report + ")"
		}
		if err := r.setDiverged(ctx, g, metav1.ConditionFalse, srv1alpha1.ReasonFencedOffRecordGone, msg); err != nil {
			return err
		}
		divergedMetrics.reset(g.Name)
	}
	_, err := r.setCondition(ctx, g, nil)
	return err
}

// setCondition writes want (nil: no StoodDown condition) when it changes the
// group's conditions, and reports whether it wrote.
func (r *StandDown) setCondition(ctx context.Context, g *srv1alpha1.ProtectionGroup, want *metav1.Condition) (bool, error) {
	return r.patchStatus(ctx, g, func(st *srv1alpha1.ProtectionGroupStatus) {
		if want == nil {
			meta.RemoveStatusCondition(&st.Conditions, srv1alpha1.ConditionStoodDown)
			return
		}
		want.ObservedGeneration = g.Generation
		meta.SetStatusCondition(&st.Conditions, *want)
	})
}

// patchStatus applies change to the group's status and writes what changed,
// if anything, with the resourceVersion the group was read with: pg-sync
// writes the rest of the group's status.
func (r *StandDown) patchStatus(ctx context.Context, g *srv1alpha1.ProtectionGroup, change func(*srv1alpha1.ProtectionGroupStatus)) (bool, error) {
	wrote, err := flow.PatchStatus(ctx, r.Client, nil, g, func(g *srv1alpha1.ProtectionGroup) { change(&g.Status) })
	if err != nil {
		return false, fmt.Errorf("writing the stand-down's status of ProtectionGroup %s: %w", g.Name, err)
	}
	return wrote, nil
}
