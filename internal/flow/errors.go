package flow

import (
	"errors"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Error is a reconcile failure with the condition reason it should be reported
// under and how it should be retried.
type Error struct {
	// Reason is a CamelCase condition reason, e.g. "VirtualMachineNotFound".
	Reason string
	// Err is the cause; its message is shown to the user, so it must never carry a
	// credential.
	Err error
	// RequeueAfter retries after a fixed interval instead of with backoff.
	RequeueAfter time.Duration
	// Terminal errors are not retried: only a spec change can fix them.
	Terminal bool
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Waiting is a condition that resolves on its own, retried after d.
func Waiting(reason string, d time.Duration, format string, args ...any) *Error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...), RequeueAfter: d}
}

// Stalled is a condition that needs the user to change something; it is not retried.
func Stalled(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...), Terminal: true}
}

// Transient wraps a cause that should be retried with the controller's backoff.
func Transient(reason string, err error) *Error {
	return &Error{Reason: reason, Err: err}
}

// ReasonOf returns the reason of the first *Error in err's chain, or fallback.
func ReasonOf(err error, fallback string) string {
	var e *Error
	if errors.As(err, &e) && e.Reason != "" {
		return e.Reason
	}
	return fallback
}

// Result turns a phase result and error into what controller-runtime should do:
// terminal errors and waits are swallowed (they are reported through conditions)
// and requeued as they ask; anything else is returned for backoff.
func Result(res ctrl.Result, err error) (ctrl.Result, error) {
	if err == nil {
		return res, nil
	}
	var e *Error
	if !errors.As(err, &e) {
		return res, err
	}
	switch {
	case e.Terminal:
		return ctrl.Result{}, nil
	case e.RequeueAfter > 0:
		return Soonest(res, After(e.RequeueAfter)), nil
	default:
		return res, err
	}
}
