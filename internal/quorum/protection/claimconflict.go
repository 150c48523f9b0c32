package protection

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/siterecovery/siterecovery/internal/flow"
)

// ConditionClaimConflict is True while the claim re-check of a Protected
// request finds another request holding one of its DRBD values on a cluster
// (reason ReasonClaimTaken, the message names the other request and the way
// out). It is absent otherwise. It is the record the re-check decides from,
// so the warning event is sent once per conflict, also across restarts.
const ConditionClaimConflict = "ClaimConflict"

// ReasonClaimTaken (ConditionClaimConflict): the request's claim was removed
// from a DRBDAllocation and another request claimed one of its values since.
const ReasonClaimTaken = EventClaimTaken

// EventClaimConflictResolved is recorded when the conflict ConditionClaimConflict showed
// ended (the claim was written back, or the other request let go of it).
const EventClaimConflictResolved = "ClaimConflictResolved"

// showClaimConflict brings ConditionClaimConflict in line with what a
// complete re-check found, and records ClaimTaken (or the resolution) only
// when the condition changes. It writes the status only then.
func (r *Reconciler) showClaimConflict(ctx context.Context, s *scope, outcomes []holdOutcome) error {
	var taken []string
	for _, o := range outcomes {
		if o.takenBy != nil {
			taken = append(taken, takenMessage(s.req, o))
		}
	}
	cur := meta.FindStatusCondition(s.req.Status.Conditions, ConditionClaimConflict)
	switch {
	case len(taken) > 0:
		msg := flow.Truncate(strings.Join(taken, "; "), maxMessage)
		if cur != nil && cur.Status == metav1.ConditionTrue && cur.Reason == ReasonClaimTaken && cur.Message == msg {
			return nil
		}
		setCondition(s.req, ConditionClaimConflict, metav1.ConditionTrue, ReasonClaimTaken, "%s", msg)
		s.trail.Events = append(s.trail.Events, flow.Event{Type: corev1.EventTypeWarning, Reason: EventClaimTaken, Message: msg})
	case cur != nil:
		meta.RemoveStatusCondition(&s.req.Status.Conditions, ConditionClaimConflict)
		s.trail.Events = append(s.trail.Events, flow.Event{Type: corev1.EventTypeNormal, Reason: EventClaimConflictResolved,
			Message: fmt.Sprintf("the claim of this request (%s) is held on every cluster again", claimValues(s.req.Status.Port, requestMinors(s.req)))})
	default:
		return nil
	}
	return r.persist(ctx, s)
}
