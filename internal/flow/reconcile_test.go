package flow

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestSoonest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a, b    ctrl.Result
		wantDur time.Duration
	}{
		{"both zero", ctrl.Result{}, ctrl.Result{}, 0},
		{"left only", After(time.Second), ctrl.Result{}, time.Second},
		{"right only", ctrl.Result{}, After(2 * time.Second), 2 * time.Second},
		{"earlier wins", After(5 * time.Second), After(time.Second), time.Second},
		{"earlier wins reversed", After(time.Second), After(5 * time.Second), time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.wantDur, Soonest(tc.a, tc.b).RequeueAfter)
		})
	}
}

func TestRunPhasesStopsAtFirstError(t *testing.T) {
	var ran []string
	phase := func(name string, res ctrl.Result, err error) Phase[*[]string] {
		return func(_ context.Context, s *[]string) (ctrl.Result, error) {
			*s = append(*s, name)
			return res, err
		}
	}
	boom := errors.New("boom")
	res, err := RunPhases(context.Background(), &ran,
		phase("a", After(10*time.Second), nil),
		phase("b", After(time.Second), boom),
		phase("c", ctrl.Result{}, nil))
	require.ErrorIs(t, err, boom)
	require.Equal(t, []string{"a", "b"}, ran, "a failed phase must stop the ones after it")
	require.Equal(t, time.Second, res.RequeueAfter)
}

func TestForEachBoundsConcurrencyAndJoinsErrors(t *testing.T) {
	var mu sync.Mutex
	inFlight, peak := 0, 0
	boom := errors.New("boom")
	err := ForEach(3, 20, func(i int) error {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		time.Sleep(time.Millisecond) // hold the slot so that calls overlap
		mu.Lock()
		inFlight--
		mu.Unlock()
		if i%7 == 0 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	require.LessOrEqual(t, peak, 3)
	require.Len(t, strings.Split(err.Error(), "\n"), 3, "i = 0, 7, 14 failed")
}
