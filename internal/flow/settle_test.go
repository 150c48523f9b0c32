package flow

import (
	"testing"
	"time"
)

// A window opens when the controller asks and holds transitional writes until
// wait has passed since the last ask; a write is never held longer than
// longest, however often the controller asks; a write that reaches the state
// asked for is never held.
func TestSettle(t *testing.T) {
	const wait, longest = 200 * time.Millisecond, time.Second
	s := NewSettle(nil, wait, longest)
	t0 := time.Unix(1000, 0)
	transitional := Change{Changed: true, Settling: Settling{Transitional: true}}
	decide := func(key string, c Change, at time.Time) time.Duration {
		t.Helper()
		write, held := s.Decide(key, c, at)
		if write == (held > 0) {
			t.Fatalf("%s at %s: write=%v with hold %s", key, at.Sub(t0), write, held)
		}
		return held
	}

	if held := decide("ns/g", transitional, t0); held != 0 {
		t.Fatalf("no window before anything was asked, held %s", held)
	}
	asked := transitional
	asked.Settling.Asked = true
	if held := decide("ns/g", asked, t0); held != wait {
		t.Fatalf("the ask's own write waits %s, held %s", wait, held)
	}
	if held := decide("ns/other", transitional, t0); held != 0 {
		t.Fatalf("windows are per key, held %s", held)
	}
	if held := decide("ns/g", Change{Changed: true}, t0); held != 0 {
		t.Fatalf("a status that reached the state asked for is written at once, held %s", held)
	}
	if held := decide("ns/g", transitional, t0.Add(wait)); held != 0 {
		t.Fatalf("the window closes wait after the ask, held %s", held)
	}
	if write, _ := s.Decide("ns/g", Change{Settling: Settling{Asked: true}}, t0.Add(time.Hour)); write {
		t.Fatal("an unchanged status is not written")
	}

	// A controller that asks at every reconcile (every 100 ms here) still
	// writes once a write has waited longest: the first held at 0 s goes out
	// at 1 s, the next, first held at 1.1 s, at 2.1 s.
	at := t0.Add(time.Minute)
	var written []time.Duration
	for step := time.Duration(0); step <= 3*longest; step += wait / 2 {
		if decide("ns/g", asked, at.Add(step)) == 0 {
			written = append(written, step)
			s.Written("ns/g", asked, at.Add(step))
		}
	}
	if want := []time.Duration{longest, 2*longest + wait/2}; len(written) != 2 || written[0] != want[0] || written[1] != want[1] {
		t.Fatalf("writes at %v, want %v", written, want)
	}

	decide("ns/g", asked, t0)
	s.Forget("ns/g")
	if held := decide("ns/g", transitional, t0); held != 0 {
		t.Fatalf("a forgotten key is not held, held %s", held)
	}
}

// What Settle lets through, the next pacer decides on.
func TestSettlePassesOnToNext(t *testing.T) {
	th := NewThrottle(time.Second)
	s := NewSettle(th, 200*time.Millisecond, time.Second)
	t0 := time.Unix(1000, 0)
	progress := Change{Changed: true, Progress: Progress{Only: true}}
	s.Written("a", progress, t0)
	if write, held := s.Decide("a", progress, t0.Add(300*time.Millisecond)); write || held != 700*time.Millisecond {
		t.Fatalf("the throttle spaces progress writes: write=%v held %s", write, held)
	}
	s.Forget("a")
	if write, _ := s.Decide("a", progress, t0.Add(300*time.Millisecond)); !write {
		t.Fatal("Forget reaches the next pacer")
	}
}
