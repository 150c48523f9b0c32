package nodeagent

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"

	"github.com/siterecovery/siterecovery/internal/drbd"
)

// Watcher is a manager Runnable that follows `drbdsetup events2` (drbd.Streamer)
// and keeps a drbd.Tracker current. Subscribers are told the name of every resource
// whose tracked state changed, and "" after each full state dump (all may have
// changed). The first dump of `events2 --now` rebuilds the state of a restarted
// agent; until it has been read, Synced is false.
type Watcher struct {
	streamer drbd.Streamer
	tracker  *drbd.Tracker
	log      logr.Logger
	synced   atomic.Bool

	mu   sync.Mutex
	subs []func(ctx context.Context, name string)
}

// NewWatcher returns a Watcher running drbdsetup through ex.
func NewWatcher(ex drbd.Executor, drbdsetup string, log logr.Logger) *Watcher {
	return &Watcher{
		streamer: drbd.Streamer{Exec: ex, DrbdsetupPath: drbdsetup},
		tracker:  drbd.NewTracker(),
		log:      log,
	}
}

// Subscribe registers fn; it runs on the events2 goroutine and should be quick.
func (w *Watcher) Subscribe(fn func(ctx context.Context, name string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs = append(w.subs, fn)
}

// Start implements manager.Runnable.
func (w *Watcher) Start(ctx context.Context) error {
	s := w.streamer
	s.Handle = func(ev drbd.Event) {
		name, changed := w.tracker.Apply(ev)
		switch {
		case ev.IsInitialDone():
			if !w.synced.Swap(true) {
				w.log.Info("DRBD state loaded from events2")
			}
			w.notify(ctx, "")
		case changed:
			w.notify(ctx, name)
		}
	}
	s.OnError = func(err error) {
		if ctx.Err() == nil {
			w.log.Error(err, "drbdsetup events2")
		}
	}
	if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every node's agent runs.
func (w *Watcher) NeedLeaderElection() bool { return false }

func (w *Watcher) notify(ctx context.Context, name string) {
	w.mu.Lock()
	subs := w.subs
	w.mu.Unlock()
	for _, fn := range subs {
		fn(ctx, name)
	}
}

// Synced reports whether the first full state dump has been read.
func (w *Watcher) Synced() bool { return w.synced.Load() }

// Get returns the tracked state of one DRBD resource.
func (w *Watcher) Get(name string) (drbd.ResourceStatus, bool) { return w.tracker.Get(name) }

// Refresh folds a reading of DRBD's current figures into the tracked state
// (drbd.Tracker.Refresh).
func (w *Watcher) Refresh(read drbd.ResourceStatus) bool { return w.tracker.Refresh(read) }

// ReadyCheck is a healthz.Checker: ready once the DRBD state has been loaded.
func (w *Watcher) ReadyCheck(_ *http.Request) error {
	if !w.Synced() {
		return errors.New("DRBD state not loaded from drbdsetup events2 yet")
	}
	return nil
}
