package flow

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
)

// Coalescer is a Pacer that bounds the status writes of a kind whose status
// changes often (a DRBDResource reports every state change of the kernel): per
// key at most one write per interval, and only when the status differs
// semantically from the last one written.
//
// Contract, for a caller that writes the latest status on every change and
// again after every returned hold:
//   - an unchanged status is never written;
//   - two writes of one key are at least interval apart;
//   - the last change is never lost: a change inside the interval gets a hold,
//     and the write after that hold writes it (a trailing write).
type Coalescer[T any] struct {
	clock     clock.PassiveClock
	interval  time.Duration
	normalise func(*T) T

	mu   sync.Mutex
	last map[string]written[T]
}

// Statuses is what a Coalescer decides on (Change.Statuses): the status to
// write and the one read, pointers to a Coalescer[T]'s T.
type Statuses struct{ Want, Current any }

type written[T any] struct {
	status T // normalised
	at     time.Time
}

// NewCoalescer allows one write per interval per key. normalise returns a copy
// of a status without the fields that do not count as a change (timestamps a
// stale cached copy may disagree on).
func NewCoalescer[T any](clk clock.PassiveClock, interval time.Duration, normalise func(*T) T) *Coalescer[T] {
	return &Coalescer[T]{clock: clk, interval: interval, normalise: normalise, last: map[string]written[T]{}}
}

// DecideStatus says what to do with want for key. current is the status as read
// from the API server; it only counts while the Coalescer has not written key
// itself (after a restart), because a cache may lag behind its own writes.
//
// write: write want now, then call WrittenStatus. wait > 0: want differs but the
// interval has not passed; decide again after wait with the then-latest
// status. Both zero: nothing to write.
func (c *Coalescer[T]) DecideStatus(key string, want, current *T) (write bool, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.last[key]
	if !ok {
		return !c.Equal(want, current), 0
	}
	if norm := c.normalise(want); equality.Semantic.DeepEqual(&norm, &last.status) {
		return false, 0
	}
	if elapsed := c.clock.Since(last.at); elapsed < c.interval {
		return false, c.interval - elapsed
	}
	return true, 0
}

// WrittenStatus records that st was written for key now.
func (c *Coalescer[T]) WrittenStatus(key string, st *T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last[key] = written[T]{status: c.normalise(st), at: c.clock.Now()}
}

// Last returns the status last written for key, if any.
func (c *Coalescer[T]) Last(key string) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.last[key]
	return w.status, ok
}

// Forget drops what the Coalescer knows about key (the object is gone).
func (c *Coalescer[T]) Forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.last, key)
}

// Equal compares two statuses after normalising them.
func (c *Coalescer[T]) Equal(a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	na, nb := c.normalise(a), c.normalise(b)
	return equality.Semantic.DeepEqual(&na, &nb)
}

// Decide implements Pacer with ch.Statuses, whose Want and Current must be *T.
func (c *Coalescer[T]) Decide(key string, ch Change, _ time.Time) (bool, time.Duration) {
	want, _ := ch.Statuses.Want.(*T)
	current, _ := ch.Statuses.Current.(*T)
	return c.DecideStatus(key, want, current)
}

// Written implements Pacer.
func (c *Coalescer[T]) Written(key string, ch Change, _ time.Time) {
	if want, ok := ch.Statuses.Want.(*T); ok {
		c.WrittenStatus(key, want)
	}
}
