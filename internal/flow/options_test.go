package flow

import (
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// Each pacer decides on its own option of a Change and on no other pacer's:
// a reconciler that fills the option of the pacer its writer uses gets that
// pacing, whatever the other options hold.
func TestEachPacerReadsItsOwnOption(t *testing.T) {
	t0 := time.Unix(1000, 0)
	settling := Settling{Asked: true, Transitional: true}

	th := NewThrottle(time.Second)
	th.Written("k", Change{}, t0)
	soon := t0.Add(time.Millisecond)
	if write, _ := th.Decide("k", Change{Changed: true, Settling: settling}, soon); !write {
		t.Error("Throttle: a change that is not progress only is written, whatever its Settling says")
	}
	if write, held := th.Decide("k", Change{Changed: true, Progress: Progress{Only: true}}, soon); write || held <= 0 {
		t.Errorf("Throttle: progress only a moment after a write is held, got write=%v hold=%s", write, held)
	}

	s := NewSettle(nil, time.Second, time.Minute)
	if write, _ := s.Decide("k", Change{Changed: true, Progress: Progress{Only: true}}, t0); !write {
		t.Error("Settle: a change with no Settling is written, whatever its Progress says")
	}
	if write, held := s.Decide("k", Change{Changed: true, Settling: settling}, t0); write || held <= 0 {
		t.Errorf("Settle: a transitional change after an ask is held, got write=%v hold=%s", write, held)
	}

	type status struct{ Phase string }
	c := NewCoalescer(clock.RealClock{}, time.Minute, func(s *status) status { return *s })
	want, current := &status{Phase: "b"}, &status{Phase: "a"}
	if write, _ := c.Decide("k", Change{Statuses: Statuses{Want: want, Current: current}}, t0); !write {
		t.Error("Coalescer: a status that differs from the one read is written, though Changed is false")
	}
	if write, _ := c.Decide("k", Change{Changed: true, Progress: Progress{Only: true}, Statuses: Statuses{Want: current, Current: current}}, t0); write {
		t.Error("Coalescer: a status equal to the one read is not written, whatever Changed and Progress say")
	}
}
