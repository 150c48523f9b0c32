package flow

import (
	"errors"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Kind says how a failed phase is retried.
type Kind int

const (
	// KindTransient is retried with the controller's backoff: a failed API call.
	KindTransient Kind = iota
	// KindWaiting resolves on its own: it is retried after RequeueAfter (zero:
	// only when a watched object changes) and shown as a condition, not an error.
	KindWaiting
	// KindStalled needs the user to change something; it is not retried.
	KindStalled
)

// Error is a reconcile failure with the condition reason it is reported under
// and how it is retried.
type Error struct {
	Kind Kind
	// Reason is a CamelCase condition reason, e.g. "VirtualMachineNotFound".
	Reason string
	// Condition is the condition type the failure is shown on; empty means the
	// kind's Ready condition.
	Condition string
	// Message, when set, is what the user sees instead of Err's text.
	Message string
	// Err is the cause; its message is shown to the user when Message is empty,
	// so it must never carry a credential.
	Err error
	// RequeueAfter retries a wait after a fixed interval.
	RequeueAfter time.Duration
}

func (e *Error) Error() string {
	if e.Message != "" {
		return e.Message
	}
	if e.Err == nil {
		return e.Reason
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Terminal reports whether only a spec change can fix e.
func (e *Error) Terminal() bool { return e.Kind == KindStalled }

// Waiting is a condition that resolves on its own, retried after d.
func Waiting(reason string, d time.Duration, format string, args ...any) *Error {
	return &Error{Kind: KindWaiting, Reason: reason, Err: fmt.Errorf(format, args...), RequeueAfter: d}
}

// Stalled is a condition that needs the user to change something; it is not retried.
func Stalled(reason, format string, args ...any) *Error {
	return &Error{Kind: KindStalled, Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Transient wraps a cause that should be retried with the controller's backoff.
func Transient(reason string, err error) *Error {
	return &Error{Kind: KindTransient, Reason: reason, Err: err}
}

// On returns e shown on condition type t instead of Ready.
func (e *Error) On(t string) *Error { e.Condition = t; return e }

// As returns the first *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// ReasonOf returns the reason of the first *Error in err's chain, or fallback.
func ReasonOf(err error, fallback string) string {
	if e := As(err); e != nil && e.Reason != "" {
		return e.Reason
	}
	return fallback
}

// Result turns a reconcile's result and error into what controller-runtime
// should do. It is the one place where the kinds of Error become a retry:
//   - Stalled is swallowed and not retried: its condition tells the user;
//   - Waiting is swallowed and requeued after its interval (or by a watch);
//   - Transient, and any error that is not an *Error, goes to the backoff.
func Result(res ctrl.Result, err error) (ctrl.Result, error) {
	if err == nil {
		return res, nil
	}
	e := As(err)
	switch {
	case e == nil || e.Kind == KindTransient:
		return ctrl.Result{}, err
	case e.Kind == KindStalled:
		return ctrl.Result{}, nil
	default:
		if e.RequeueAfter > 0 {
			res = Soonest(res, After(e.RequeueAfter))
		}
		return res, nil
	}
}
