package flow

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Trail is the audit trail of one request (a FailoverRequest, a TestFailover,
// a ProtectionRequest) during one reconcile: the phase it is in, the history
// of the phases it entered and when, its conditions, and the events to record
// once the status showing them is written. It points into the request's
// status, so what it sets is what the status writer writes.
//
// Every kind shows a request the same way: a phase in progress or a wait is
// Ready=False with a reason and the human message (Progressing while a phase
// just runs), a request that succeeded is Ready=True, one that failed is
// Ready=False with the reason of the failure. A kind that has a
// status.message also carries the last message there. Reconciling and
// Stalled follow Ready (DeriveKStatus): a request in progress is
// Reconciling, one that failed, or that holds for the operator, is Stalled,
// so kstatus reads it InProgress, Current once it succeeded, Failed once it
// failed.
type Trail[P ~string] struct {
	Phase      *P
	History    *[]srv1alpha1.PhaseTransition
	Conditions *[]metav1.Condition
	// Message is the request's status.message; nil when the kind has none.
	Message *string
	// CompletionTime is set when the request enters a terminal phase; nil when
	// the kind records it itself.
	CompletionTime **metav1.Time
	Generation     int64
	Now            time.Time
	Terminals[P]
	// MaxMessage truncates the messages of the history; zero keeps them whole.
	MaxMessage int

	// Events are the transitions to record once the status is written, so that
	// a failed write does not leave an event of a transition never persisted.
	Events []Event
}

// Terminals are the terminal phases of a request kind.
type Terminals[P ~string] struct{ Succeeded, Failed P }

// IsTerminal reports whether p is one of the terminal phases.
func (k Terminals[P]) IsTerminal(p P) bool { return p == k.Succeeded || p == k.Failed }

// Terminal reports whether the request is in a terminal phase.
func (t *Trail[P]) Terminal() bool { return t.IsTerminal(*t.Phase) }

// Enter moves the request to phase p: the phase, its history, the message, a
// Normal event named after p (Warning for Failed) and, for a phase that is not
// terminal, Ready=False with reason Progressing.
func (t *Trail[P]) Enter(p P, format string, args ...any) {
	t.EnterWithReason(p, string(p), format, args...)
}

// EnterWithReason is Enter with an event reason other than the phase's name.
func (t *Trail[P]) EnterWithReason(p P, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	*t.Phase = p
	if t.Message != nil {
		*t.Message = msg
	}
	*t.History = append(*t.History, srv1alpha1.PhaseTransition{
		Phase: string(p), Time: metav1.NewMicroTime(t.Now), Message: Truncate(msg, t.MaxMessage),
	})
	kind := corev1.EventTypeNormal
	if p == t.Failed {
		kind = corev1.EventTypeWarning
	}
	t.Events = append(t.Events, Event{Type: kind, Reason: reason, Message: msg})
	if !t.IsTerminal(p) {
		t.Condition(srv1alpha1.ConditionReady, metav1.ConditionFalse, srv1alpha1.ReasonProgressing, msg)
	} else if t.CompletionTime != nil {
		*t.CompletionTime = &metav1.Time{Time: t.Now}
	}
	DeriveKStatus(t.Conditions, t.Generation, p == t.Failed)
}

// EnteredAt is when the request last entered p; now if it never did.
func (t *Trail[P]) EnteredAt(p P) time.Time {
	h := *t.History
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Phase == string(p) {
			return h[i].Time.Time
		}
	}
	return t.Now
}

// Wait shows what the current phase waits on, without an event: Ready=False
// with reason and the message (and status.message where the kind has one).
func (t *Trail[P]) Wait(reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if t.Message != nil {
		*t.Message = msg
	}
	t.Condition(srv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
}

// Fail ends the request in the Failed phase with reason on Ready.
func (t *Trail[P]) Fail(reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.Enter(t.Failed, "%s", msg)
	t.Condition(srv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
}

// Succeed ends the request in the Succeeded phase with reason on Ready.
func (t *Trail[P]) Succeed(reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.Enter(t.Succeeded, "%s", msg)
	t.Condition(srv1alpha1.ConditionReady, metav1.ConditionTrue, reason, msg)
}

// Report shows a step's error the way every kind shows it: a Stalled error
// fails the request with its reason, a Waiting one is a wait with its reason;
// other errors are left to the retry.
func (t *Trail[P]) Report(err error) {
	e := As(err)
	switch {
	case e == nil:
	case e.Kind == KindStalled:
		t.Fail(e.Reason, "%s", e.Error())
	case e.Kind == KindWaiting:
		t.Wait(e.Reason, "%s", e.Error())
	}
}

// Condition sets a condition at the request's generation; a changed message
// alone does not move its transition time. Setting Ready sets Reconciling and
// Stalled with it.
func (t *Trail[P]) Condition(typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(t.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: Truncate(message, t.MaxMessage), ObservedGeneration: t.Generation,
	})
	if typ == srv1alpha1.ConditionReady {
		DeriveKStatus(t.Conditions, t.Generation, *t.Phase == t.Failed)
	}
}

// Truncate bounds a condition or history message to limit bytes, marking the
// cut with "..."; a limit of 3 or less keeps it whole.
func Truncate(s string, limit int) string {
	if limit > 3 && len(s) > limit {
		return s[:limit-3] + "..."
	}
	return s
}
