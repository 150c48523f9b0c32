package flow

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
)

// request is a scope with a phase, as a request kind has.
type request struct {
	phase  string
	ran    []string
	report []string
}

func testRunner(steps map[string]Phase[*request]) Runner[*request, string] {
	return Runner[*request, string]{
		Phase: func(r *request) string { return r.phase },
		Step:  func(r *request) Phase[*request] { return steps[r.phase] },
		Report: func(r *request, err error) {
			r.report = append(r.report, ReasonOf(err, "Plain"))
			if e := As(err); e != nil && e.Kind == KindStalled {
				r.phase = "Failed"
			}
		},
	}
}

func step(name, next string, res ctrl.Result, err error) Phase[*request] {
	return func(_ context.Context, r *request) (ctrl.Result, error) {
		r.ran = append(r.ran, name)
		if next != "" {
			r.phase = next
		}
		return res, err
	}
}

func TestRunnerRunsUntilAPhaseStays(t *testing.T) {
	r := &request{phase: "A"}
	res, err := testRunner(map[string]Phase[*request]{
		"A": step("A", "B", After(time.Minute), nil),
		"B": step("B", "C", ctrl.Result{}, nil),
		"C": step("C", "", After(time.Second), nil), // waits in C
		"D": step("D", "", ctrl.Result{}, nil),
	}).Run(context.Background(), r)
	require.NoError(t, err)
	require.Equal(t, []string{"A", "B", "C"}, r.ran, "every phase that completes hands over to the next in one run")
	require.Equal(t, time.Second, res.RequeueAfter, "the soonest requeue any step asked for")
}

func TestRunnerStopsOnAnErrorThatKeepsThePhase(t *testing.T) {
	r := &request{phase: "A"}
	wait := Waiting("Syncing", 5*time.Second, "3 of 4 synced")
	_, err := testRunner(map[string]Phase[*request]{
		"A": step("A", "B", ctrl.Result{}, nil),
		"B": step("B", "", ctrl.Result{}, wait),
		"C": step("C", "", ctrl.Result{}, nil),
	}).Run(context.Background(), r)
	require.ErrorIs(t, err, wait)
	require.Equal(t, []string{"A", "B"}, r.ran, "a step after a failed one must never run")
	require.Equal(t, []string{"Syncing"}, r.report, "the error is reported on the scope")
}

func TestRunnerGoesOnWhenAReportMovesThePhase(t *testing.T) {
	r := &request{phase: "A"}
	_, err := testRunner(map[string]Phase[*request]{
		"A":      step("A", "", ctrl.Result{}, Stalled("Invalid", "bad spec")),
		"Failed": step("Cleanup", "Done", ctrl.Result{}, nil),
	}).Run(context.Background(), r)
	require.NoError(t, err, "a failure that ended the phase is shown by the report, not returned")
	require.Equal(t, []string{"A", "Cleanup"}, r.ran, "the phase the report entered runs at once")
	require.Equal(t, "Done", r.phase)
}

func TestRunnerIsBounded(t *testing.T) {
	r := &request{phase: "A"}
	runner := testRunner(map[string]Phase[*request]{
		"A": step("A", "B", ctrl.Result{}, nil),
		"B": step("B", "A", ctrl.Result{}, nil),
	})
	runner.Limit = 5
	_, err := runner.Run(context.Background(), r)
	require.NoError(t, err)
	require.Len(t, r.ran, 5, "a cycle of phases ends after Limit steps")
}

func TestResultMapsEveryKind(t *testing.T) {
	plain := errors.New("connection refused")
	for _, tc := range []struct {
		name    string
		res     ctrl.Result
		err     error
		want    time.Duration
		wantErr error
	}{
		{"no error keeps the result", After(time.Minute), nil, time.Minute, nil},
		{"stalled is not retried", After(time.Minute), Stalled("Bad", "fix the spec"), 0, nil},
		{"waiting requeues after its interval", After(time.Minute), Waiting("Wait", 5*time.Second, "not yet"), 5 * time.Second, nil},
		{"an earlier requeue of the phases wins", After(time.Second), Waiting("Wait", 5*time.Second, "not yet"), time.Second, nil},
		{"a wait for a watch keeps the phases' requeue", After(time.Minute), Waiting("Wait", 0, "not yet"), time.Minute, nil},
		{"a wrapped wait is still a wait", ctrl.Result{}, errors.Join(Waiting("Wait", time.Second, "x")), time.Second, nil},
		{"transient goes to the backoff", After(time.Minute), Transient("Conflict", plain), 0, plain},
		{"a plain error goes to the backoff", After(time.Minute), plain, 0, plain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Result(tc.res, tc.err)
			require.Equal(t, tc.want, res.RequeueAfter)
			if tc.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.wantErr)
			}
		})
	}
}

func TestErrorShowsItsMessage(t *testing.T) {
	cause := errors.New("exit status 10")
	e := &Error{Kind: KindWaiting, Reason: "PromotionRefused", Message: "DRBD refused the promotion", Err: cause}
	require.Equal(t, "DRBD refused the promotion", e.Error())
	require.ErrorIs(t, e, cause)
	require.Equal(t, "Configured", Stalled("InvalidSpec", "x").On("Configured").Condition)
	require.True(t, Stalled("InvalidSpec", "x").Terminal())
	require.False(t, Waiting("Wait", time.Second, "x").Terminal())
	require.Equal(t, "Bad", ReasonOf(errors.Join(Stalled("Bad", "x")), "Fallback"))
	require.Equal(t, "Fallback", ReasonOf(cause, "Fallback"))
}
