package flow

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Runner runs a request that moves from phase to phase (a FailoverRequest, a
// TestFailover, a ProtectionRequest): the step of the phase the request is in
// and, whenever a step moves it to another phase, the next step, so that one
// reconcile goes as far as it can. Every step must be idempotent and keep its
// progress in the status, so that a reconcile after a crash resumes it.
type Runner[S any, P comparable] struct {
	// Phase is the phase s is in.
	Phase func(s S) P
	// Step is the step to run for s; nil ends the run (a terminal phase).
	Step func(s S) Phase[S]
	// Report shows a step's error on s before the runner acts on it: a Stalled
	// error usually fails the request (a terminal phase), a Waiting one sets
	// the condition that says what the request waits on.
	Report func(s S, err error)
	// Limit bounds the steps of one run; 16 if zero.
	Limit int
}

// Run runs steps until one leaves the request in its phase or the request
// reaches a phase without a step. It returns the soonest requeue the steps
// asked for and the error of the step that stopped the run; an error whose
// report moved the request to another phase (a failure) does not stop it, so
// that the phase entered runs at once (a cleanup, say).
func (r Runner[S, P]) Run(ctx context.Context, s S) (ctrl.Result, error) {
	limit := r.Limit
	if limit == 0 {
		limit = 16
	}
	var res ctrl.Result
	for range limit {
		phase := r.Phase(s)
		step := r.Step(s)
		if step == nil {
			return res, nil
		}
		sr, err := step(ctx, s)
		res = Soonest(res, sr)
		if err != nil {
			if r.Report != nil {
				r.Report(s, err)
			}
			if r.Phase(s) == phase {
				return res, err
			}
			continue
		}
		if r.Phase(s) == phase {
			return res, nil
		}
	}
	return res, nil
}
