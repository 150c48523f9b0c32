package nodeagent

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// conflictRetry is the wait after a status write lost against a newer object.
const conflictRetry = 200 * time.Millisecond

// writeStatus writes the computed status through the agent's flow.StatusWriter,
// paced by the Coalescer: at most one write per resource per interval, none when
// nothing changed, and a trailing write (requeue) for a change that came too
// soon. Events are recorded for condition transitions; a role change is not
// one (status.role says it, and pg-controller records one event per group
// once its replicas share the new role, instead of one per VM).
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) (ctrl.Result, error) {
	key := s.key.String()
	prev := s.before
	if last, ok := r.Coalescer.Last(key); ok {
		prev = last
	}
	// The Coalescer ignores lastUpdateTime, so setting it first decides nothing.
	now := metav1.NewTime(r.Clock.Now())
	s.obj.Status.LastUpdateTime = &now
	w := flow.NewStatusWriter(r.Client, nil, flow.WithPacer(r.Coalescer), flow.WithClock(r.Clock))
	out, err := w.Write(ctx, s.obj, flow.Change{Statuses: flow.Statuses{Want: &s.obj.Status, Current: &s.before}})
	if err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	if !out.Wrote {
		return ctrl.Result{RequeueAfter: out.Hold}, nil
	}
	r.recordTransitions(s.obj, prev.Conditions)
	return ctrl.Result{}, nil
}

// recordTransitions emits one event per condition whose status or reason changed.
func (r *Reconciler) recordTransitions(obj *srv1alpha1.DRBDResource, prev []metav1.Condition) {
	for _, c := range obj.Status.Conditions {
		old := meta.FindStatusCondition(prev, c.Type)
		if old != nil && old.Status == c.Status && old.Reason == c.Reason {
			continue
		}
		if old == nil && c.Status != metav1.ConditionFalse {
			continue // first report of a healthy or unknown condition is not news
		}
		eventType := "Normal"
		if c.Status == metav1.ConditionFalse && isWarningReason(c.Reason) {
			eventType = "Warning"
		}
		r.event(obj, eventType, c.Reason, "%s=%s: %s", c.Type, c.Status, c.Message)
	}
}

func isWarningReason(reason string) bool {
	switch reason {
	case srv1alpha1.ReasonProgressing, srv1alpha1.ReasonSyncing, ReasonWaitingForPeers, ReasonNotUp:
		return false
	}
	return true
}

func (r *Reconciler) event(obj runtime.Object, eventType, reason, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, eventType, reason, "Reconcile", note, args...)
	}
}
