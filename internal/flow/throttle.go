package flow

import (
	"sync"
	"time"
)

// Throttle is a Pacer that spaces out the status writes that only report
// progress (a waiting message that names what is still pending): a flow over
// many objects would otherwise write its status once for every object that
// moves, and each write costs the API server and every watcher of the object.
// Writes that change anything else (a phase, a condition) are never held back,
// and the last progress message is never lost: a held write gets a wait, and
// the reconcile after it writes the then-current message.
type Throttle struct {
	interval time.Duration
	// perItems, when set, widens the interval for a status of more items
	// (Progress.Items): one interval per perItems items.
	perItems int
	longest  time.Duration

	mu   sync.Mutex
	last map[string]time.Time
}

// Progress is what a Throttle decides on (Change.Progress).
type Progress struct {
	// Only: the change is a progress message alone (what a wait still waits
	// on), which a Throttle holds back.
	Only bool
	// Items is how many entries the status lists (VMs, replicas), for a
	// Throttle that spaces the progress writes of a larger status further.
	Items int
}

// NewThrottle allows one progress-only write per key per interval.
func NewThrottle(interval time.Duration) *Throttle {
	return &Throttle{interval: interval, last: map[string]time.Time{}}
}

// ScaledPer widens the interval with the size of the status: a change of
// Items items waits one interval per n items, never less than one interval
// nor more than longest. Each write of a status costs the API server and
// every watcher in proportion to its size, and a status of N items reports
// progress for a time that grows with N: at a fixed interval its progress
// would cost N² bytes.
func (t *Throttle) ScaledPer(n int, longest time.Duration) *Throttle {
	t.perItems, t.longest = n, longest
	return t
}

// Decide implements Pacer: a change is written unless it is progress only and
// key was written less than the interval ago.
func (t *Throttle) Decide(key string, c Change, now time.Time) (bool, time.Duration) {
	if !c.Changed {
		return false, 0
	}
	if !c.Progress.Only || len(c.Events) > 0 {
		return true, 0
	}
	if held := t.hold(key, now, t.intervalFor(c.Progress.Items)); held > 0 {
		return false, held
	}
	return true, 0
}

func (t *Throttle) intervalFor(items int) time.Duration {
	if t.perItems <= 0 || items <= t.perItems {
		return t.interval
	}
	return min(t.interval*time.Duration(items)/time.Duration(t.perItems), max(t.longest, t.interval))
}

// Written implements Pacer.
func (t *Throttle) Written(key string, _ Change, now time.Time) { t.written(key, now) }

// Hold returns how long a progress-only write of key must wait at now; zero
// means write it now.
func (t *Throttle) Hold(key string, now time.Time) time.Duration {
	return t.hold(key, now, t.interval)
}

func (t *Throttle) hold(key string, now time.Time, interval time.Duration) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	last, ok := t.last[key]
	if !ok {
		return 0
	}
	if wait := interval - now.Sub(last); wait > 0 {
		return wait
	}
	return 0
}

func (t *Throttle) written(key string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last[key] = now
}

// Forget drops key, once its object no longer reports progress.
func (t *Throttle) Forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.last, key)
}
