package flow

import (
	"sync"
	"time"
)

// Settle is a Pacer that lets an object in transition settle before its
// status goes out. Once a reconcile asked the object's dependents to change
// (Settling.Asked: VMs to stop, replicas to take a role), a status that shows a
// state on the way (Settling.Transitional) is held for wait: the dependents'
// answers usually come within that time, each wakes the object, and the
// status is then written once in the state they lead to, instead of once per
// step on the way (stopping, then stopped). A status that is not on the way,
// the state asked for reached, is never held: that is the write others wait
// on. A write is never held longer than longest, so an object whose
// controller keeps asking still reports at least that often. What Settle lets
// through, next (nil: any change) decides on.
type Settle struct {
	next          Pacer
	wait, longest time.Duration

	mu      sync.Mutex
	windows map[string]settleWindow
}

// Settling is what a Settle decides on (Change.Settling).
type Settling struct {
	// Asked: the reconcile asked the object's dependents to change, whose
	// answers a Settle waits for.
	Asked bool
	// Transitional: the status shows a state on the way to the one asked
	// for, which a Settle holds back while the dependents answer.
	Transitional bool
}

// settleWindow: transitional writes wait until until; heldSince is when the
// write now waiting was first held (zero when none is).
type settleWindow struct{ until, heldSince time.Time }

// NewSettle holds transitional writes for wait after an ask, at most longest
// per write, and passes the rest to next.
func NewSettle(next Pacer, wait, longest time.Duration) *Settle {
	return &Settle{next: next, wait: wait, longest: longest, windows: map[string]settleWindow{}}
}

// Decide implements Pacer. An ask opens key's window at now, or extends it.
func (s *Settle) Decide(key string, c Change, now time.Time) (bool, time.Duration) {
	if c.Settling.Asked {
		s.asked(key, now)
	}
	if c.Changed && c.Settling.Transitional {
		if held := s.hold(key, now); held > 0 {
			return false, held
		}
	}
	if s.next == nil {
		return c.Changed, 0
	}
	return s.next.Decide(key, c, now)
}

// Written implements Pacer: the hold of key ends with the write.
func (s *Settle) Written(key string, c Change, now time.Time) {
	s.mu.Lock()
	if cur, ok := s.windows[key]; ok {
		cur.heldSince = time.Time{}
		s.windows[key] = cur
	}
	s.mu.Unlock()
	if s.next != nil {
		s.next.Written(key, c, now)
	}
}

// Forget implements Pacer.
func (s *Settle) Forget(key string) {
	s.mu.Lock()
	delete(s.windows, key)
	s.mu.Unlock()
	if s.next != nil {
		s.next.Forget(key)
	}
}

func (s *Settle) asked(key string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.windows[key]
	if !now.Before(cur.until) {
		cur = settleWindow{} // the last window has closed: a new one begins
	}
	cur.until = now.Add(s.wait)
	s.windows[key] = cur
}

// hold is how long a transitional write of key must wait at now; zero means
// write it now.
func (s *Settle) hold(key string, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.windows[key]
	if !ok || !now.Before(cur.until) {
		delete(s.windows, key)
		return 0
	}
	if cur.heldSince.IsZero() {
		cur.heldSince = now
	}
	longest := cur.heldSince.Add(s.longest)
	if !now.Before(longest) {
		cur.heldSince = time.Time{}
		s.windows[key] = cur
		return 0
	}
	s.windows[key] = cur
	if cur.until.Before(longest) {
		return cur.until.Sub(now)
	}
	return longest.Sub(now)
}
