package flow

import (
	"context"
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Phase is one step of a reconcile working on a scope S.
type Phase[S any] func(ctx context.Context, s S) (ctrl.Result, error)

// RunPhases runs phases in order and returns the soonest requeue any of them asked
// for. A phase that fails stops the ones after it: a DR flow must never act on a
// step whose predecessor did not complete. Errors are joined so that callers can
// still inspect each with errors.As.
func RunPhases[S any](ctx context.Context, s S, phases ...Phase[S]) (ctrl.Result, error) {
	var res ctrl.Result
	for _, phase := range phases {
		r, err := phase(ctx, s)
		res = Soonest(res, r)
		if err != nil {
			return res, errors.Join(err)
		}
	}
	return res, nil
}

// Soonest keeps the earlier of two requeue requests; zero asks for none.
func Soonest(a, b ctrl.Result) ctrl.Result {
	if a.RequeueAfter == 0 {
		return b
	}
	if b.RequeueAfter == 0 || a.RequeueAfter <= b.RequeueAfter {
		return a
	}
	return b
}

// After is a result that requeues after d.
func After(d time.Duration) ctrl.Result { return ctrl.Result{RequeueAfter: d} }
