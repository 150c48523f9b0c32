package freeze_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/freeze"
)

// fakeGuests records which guests are frozen; a guest in noAgent refuses as
// KubeVirt does without a guest agent, one in hang never answers.
type fakeGuests struct {
	mu      sync.Mutex
	frozen  map[types.NamespacedName]bool
	noAgent map[types.NamespacedName]bool
	hang    map[types.NamespacedName]bool
	bound   time.Duration
}

func newFake() *fakeGuests {
	return &fakeGuests{frozen: map[types.NamespacedName]bool{}, noAgent: map[types.NamespacedName]bool{}, hang: map[types.NamespacedName]bool{}}
}

func (f *fakeGuests) Freeze(ctx context.Context, vm types.NamespacedName, unfreeze time.Duration) error {
	f.mu.Lock()
	f.bound = unfreeze
	hang, noAgent := f.hang[vm], f.noAgent[vm]
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if noAgent {
		return errors.New("Internal error occurred: Guest agent is not responding")
	}
	f.mu.Lock()
	f.frozen[vm] = true
	f.mu.Unlock()
	return nil
}

func (f *fakeGuests) Unfreeze(ctx context.Context, vm types.NamespacedName) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.frozen, vm)
	return nil
}

func (f *fakeGuests) frozenNow() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.frozen)
}

var (
	db  = types.NamespacedName{Namespace: "apps", Name: "db"}
	web = types.NamespacedName{Namespace: "apps", Name: "web"}
)

func TestEveryGuestFrozenMakesAnApplicationPoint(t *testing.T) {
	f := newFake()
	var during int
	p, err := freeze.Point(t.Context(), f, []types.NamespacedName{db, web}, freeze.Options{Bound: 30 * time.Second, Source: "TestFailover"},
		func(context.Context) error { during = f.frozenNow(); return nil })
	require.NoError(t, err)
	require.Equal(t, 2, during, "the point is cut while both guests are frozen")
	require.Zero(t, f.frozenNow(), "both guests are thawed after the point")
	require.Equal(t, srv1alpha1.ConsistencyApplication, p.Consistency)
	require.Empty(t, p.CrashConsistentVMs)
	require.Equal(t, "TestFailover", p.Source)
	require.Equal(t, 30*time.Second, f.bound, "KubeVirt is told to thaw by itself at the bound")
}

func TestAGuestWithoutAgentMakesACrashPointNamingIt(t *testing.T) {
	f := newFake()
	f.noAgent[web] = true
	took := false
	p, err := freeze.Point(t.Context(), f, []types.NamespacedName{db, web}, freeze.Options{Bound: 30 * time.Second},
		func(context.Context) error { took = true; return nil })
	require.NoError(t, err)
	require.True(t, took, "a guest without agent never blocks the point")
	require.Equal(t, srv1alpha1.ConsistencyCrash, p.Consistency)
	require.Equal(t, []string{"apps/web"}, p.CrashConsistentVMs)
	require.Contains(t, p.Message, "apps/web not frozen: Internal error occurred: Guest agent is not responding")
	require.Zero(t, f.frozenNow())
}

func TestAnUnansweredFreezeIsBoundedAndThePointStillCut(t *testing.T) {
	f := newFake()
	f.hang[web] = true
	var left time.Duration
	p, err := freeze.Point(t.Context(), f, []types.NamespacedName{db, web}, freeze.Options{Bound: 3 * time.Second},
		func(ctx context.Context) error {
			d, ok := ctx.Deadline()
			require.True(t, ok, "the cut is bounded")
			left = time.Until(d)
			return nil
		})
	require.NoError(t, err)
	require.Positive(t, left, "the freeze calls leave time to cut the point")
	require.Equal(t, []string{"apps/web"}, p.CrashConsistentVMs)
	require.Contains(t, p.Message, "context deadline exceeded")
	require.Zero(t, f.frozenNow())
}

func TestAFailedCutStillThaws(t *testing.T) {
	f := newFake()
	boom := errors.New("snapshot refused")
	_, err := freeze.Point(t.Context(), f, []types.NamespacedName{db, web}, freeze.Options{Bound: 30 * time.Second},
		func(context.Context) error { return boom })
	require.ErrorIs(t, err, boom)
	require.Zero(t, f.frozenNow(), "every guest is thawed although no point was taken")
}

func TestACancelledCallerStillThaws(t *testing.T) {
	f := newFake()
	ctx, cancel := context.WithCancel(t.Context())
	_, err := freeze.Point(ctx, f, []types.NamespacedName{db, web}, freeze.Options{Bound: 30 * time.Second},
		func(ctx context.Context) error { cancel(); <-ctx.Done(); return ctx.Err() })
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, f.frozenNow(), "the thaw outlives the caller's context")
}

func TestAPointCutBeyondTheBoundIsCrash(t *testing.T) {
	f := newFake()
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	p, err := freeze.Point(t.Context(), f, []types.NamespacedName{db}, freeze.Options{Bound: 10 * time.Second, Now: clock},
		func(context.Context) error { now = now.Add(11 * time.Second); return nil })
	require.NoError(t, err)
	require.Equal(t, srv1alpha1.ConsistencyCrash, p.Consistency)
	require.Equal(t, []string{"apps/db"}, p.CrashConsistentVMs)
	require.Contains(t, p.Message, "beyond the bound of 10s")
}

func TestHoldLeavesTheStoppedGuestsFrozen(t *testing.T) {
	f := newFake()
	p, err := freeze.Point(t.Context(), f, []types.NamespacedName{db, web}, freeze.Options{Bound: 30 * time.Second, Hold: true},
		func(context.Context) error { return nil })
	require.NoError(t, err)
	require.Equal(t, 2, f.frozenNow(), "take stopped them frozen; KubeVirt thaws one still running at the bound")
	require.Equal(t, []string{"apps/db", "apps/web"}, p.FrozenVMs)

	_, err = freeze.Point(t.Context(), f, []types.NamespacedName{db, web}, freeze.Options{Bound: 30 * time.Second, Hold: true},
		func(context.Context) error { return errors.New("stop refused") })
	require.Error(t, err)
	require.Zero(t, f.frozenNow(), "a failed take thaws even when holding")
}
