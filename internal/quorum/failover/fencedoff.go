package failover

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// The group's quorum copy remembers, in FencedOffAnnotation, the cluster an
// unplanned failover fenced off until a planned failback has rejoined it. The
// record lives on the quorum cluster because the replicas that fence it off
// (on the active cluster) are exactly what an unplanned request back cannot
// read: it runs when the active cluster is down.

// markFencedOff records the source as fenced off, and by which request,
// before any target replica cuts it off, so that no moment exists where it is
// cut off unrecorded.
func (r *Reconciler) markFencedOff(ctx context.Context, s *scope) error {
	if s.group.Annotations[srv1alpha1.FencedOffAnnotation] == s.source() && s.group.Annotations[srv1alpha1.FencedOffByAnnotation] != "" {
		return nil
	}
	if err := r.patchFencedOff(ctx, s, s.source(), string(s.req.UID)); err != nil {
		return fmt.Errorf("recording %s as fenced off on ProtectionGroup %s: %w", s.source(), s.group.Name, err)
	}
	return nil
}

// clearFencedOff drops the record once the target has rejoined.
func (r *Reconciler) clearFencedOff(ctx context.Context, s *scope) error {
	if s.group.Annotations[srv1alpha1.FencedOffAnnotation] != s.target() {
		return nil
	}
	if err := r.patchFencedOff(ctx, s, nil, nil); err != nil {
		return fmt.Errorf("clearing the fenced-off record of %s on ProtectionGroup %s: %w", s.target(), s.group.Name, err)
	}
	return nil
}

// patchFencedOff sets (strings) or removes (nil) the fenced-off record.
func (r *Reconciler) patchFencedOff(ctx context.Context, s *scope, cluster, by any) error {
	if err := patchFencedOffRecord(ctx, r.Client, s.group, cluster, by); err != nil {
		return err
	}
	if c, ok := cluster.(string); ok {
		if s.group.Annotations == nil {
			s.group.Annotations = map[string]string{}
		}
		s.group.Annotations[srv1alpha1.FencedOffAnnotation] = c
		s.group.Annotations[srv1alpha1.FencedOffByAnnotation], _ = by.(string)
	} else {
		delete(s.group.Annotations, srv1alpha1.FencedOffAnnotation)
		delete(s.group.Annotations, srv1alpha1.FencedOffByAnnotation)
	}
	return nil
}

// patchFencedOffRecord writes the group's two fenced-off annotations.
func patchFencedOffRecord(ctx context.Context, c client.Client, g *srv1alpha1.ProtectionGroup, cluster, by any) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		srv1alpha1.FencedOffAnnotation: cluster, srv1alpha1.FencedOffByAnnotation: by}}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, g, client.RawPatch(types.MergePatchType, body))
}

// holdFencedOffTarget holds an unplanned request to a cluster that is fenced
// off and not rejoined: its replicas hold the data they had when it was cut
// off, plus what was written there since, and none of the writes made on the
// active cluster since. Running the group there would lose those writes
// silently, so nothing changes until the operator chooses.
func holdFencedOffTarget(s *scope) error {
	if !s.unplanned() {
		return nil
	}
	if s.group.Annotations[srv1alpha1.FencedOffAnnotation] != s.target() {
		// The operator removed the record, accepting the loss: the hold it
		// caused ends, and its condition with it.
		if c := meta.FindStatusCondition(s.req.Status.Conditions, srv1alpha1.ConditionTargetRejoined); c != nil && c.Reason == srv1alpha1.ReasonTargetFencedOff {
			meta.RemoveStatusCondition(&s.req.Status.Conditions, srv1alpha1.ConditionTargetRejoined)
		}
		return nil
	}
	msg := fmt.Sprintf("%s was fenced off during an unplanned failover and has not rejoined since (annotation %s=%s on ProtectionGroup %s): its DRBD data is what it had when it was cut off, plus any writes made there while fenced, and none of the writes made on %s since. "+
		"An unplanned failover to it would run group %s on that data and lose them; nothing was changed. "+
		"Either bring %s back, delete this request and fail back with a planned FailoverRequest to %s annotated %s=%s, which stops the group on %s and resyncs it from %s first; "+
		"or, if %s is lost for good and losing its writes since the fencing is accepted, remove the record with: kubectl annotate protectiongroup -n %s %s %s- %s=%s (the disaster-operator role and this confirmation are needed) and this request continues",
		s.target(), srv1alpha1.FencedOffAnnotation, s.target(), s.group.Name, s.source(),
		s.group.Name,
		s.source(), s.target(), srv1alpha1.DiscardDivergedAnnotation, s.group.Name, s.target(), s.source(),
		s.source(), s.group.Namespace, s.group.Name, srv1alpha1.FencedOffAnnotation, srv1alpha1.ConfirmAnnotation, s.group.Name)
	s.trail.Condition(srv1alpha1.ConditionTargetRejoined, metav1.ConditionFalse, srv1alpha1.ReasonTargetFencedOff, msg)
	return flow.Waiting(srv1alpha1.ReasonTargetFencedOff, fencingRecheck, "%s", msg)
}
