package failover

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// enter moves the request to phase and records it in the audit trail.
func (s *scope) enter(phase srv1alpha1.FailoverPhase, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	st := &s.req.Status
	st.Phase = phase
	st.Message = msg
	st.PhaseHistory = append(st.PhaseHistory, srv1alpha1.PhaseTransition{
		Phase: string(phase), Time: metav1.NewMicroTime(s.now), Message: msg,
	})
	kind := corev1.EventTypeNormal
	if phase == srv1alpha1.FailoverFailed {
		kind = corev1.EventTypeWarning
	}
	s.events = append(s.events, flow.Event{Type: kind, Reason: string(phase), Message: msg})
	if phase == srv1alpha1.FailoverCompleted || phase == srv1alpha1.FailoverFailed {
		st.CompletionTime = &metav1.Time{Time: s.now}
	}
}

// fail ends the request with a reason on the Ready condition.
func (s *scope) fail(reason, format string, args ...any) {
	s.enter(srv1alpha1.FailoverFailed, format, args...)
	s.condition(srv1alpha1.ConditionReady, metav1.ConditionFalse, reason, s.req.Status.Message)
}

// complete ends the request successfully.
func (s *scope) complete(reason, format string, args ...any) {
	s.enter(srv1alpha1.FailoverCompleted, format, args...)
	s.condition(srv1alpha1.ConditionReady, metav1.ConditionTrue, reason, s.req.Status.Message)
}

// condition sets a condition; a changed message alone does not bump the time.
func (s *scope) condition(t string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.req.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: s.req.Generation,
	})
}

// waiting records why the current phase cannot proceed yet, without an event.
func (s *scope) waiting(format string, args ...any) {
	s.req.Status.Message = fmt.Sprintf(format, args...)
}

func terminal(p srv1alpha1.FailoverPhase) bool {
	return p == srv1alpha1.FailoverCompleted || p == srv1alpha1.FailoverFailed
}
