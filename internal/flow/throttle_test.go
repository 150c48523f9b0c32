package flow

import (
	"testing"
	"time"
)

func TestThrottle(t *testing.T) {
	th := NewThrottle(time.Second)
	t0 := time.Unix(1000, 0)
	if held := th.Hold("a", t0); held != 0 {
		t.Fatalf("a key never written must not be held, got %s", held)
	}
	th.Written("a", Change{}, t0)
	if held := th.Hold("a", t0.Add(300*time.Millisecond)); held != 700*time.Millisecond {
		t.Fatalf("a progress write 300ms after a write must wait 700ms, got %s", held)
	}
	if held := th.Hold("b", t0.Add(300*time.Millisecond)); held != 0 {
		t.Fatalf("keys are independent, got %s", held)
	}
	if held := th.Hold("a", t0.Add(time.Second)); held != 0 {
		t.Fatalf("after the interval the write goes, got %s", held)
	}
	th.Forget("a")
	if held := th.Hold("a", t0.Add(10*time.Millisecond)); held != 0 {
		t.Fatalf("a forgotten key is not held, got %s", held)
	}
}

func TestThrottleScaledPerItems(t *testing.T) {
	th := NewThrottle(time.Second).ScaledPer(50, 10*time.Second)
	t0 := time.Unix(1000, 0)
	progress := func(items int) Change { return Change{Changed: true, Progress: Progress{Only: true, Items: items}} }
	th.Written("a", Change{}, t0)
	for _, c := range []struct {
		items int
		after time.Duration
		held  time.Duration
	}{
		{items: 20, after: 300 * time.Millisecond, held: 700 * time.Millisecond},   // small: the base interval
		{items: 200, after: 300 * time.Millisecond, held: 3700 * time.Millisecond}, // 4 intervals for 200 items
		{items: 200, after: 4 * time.Second, held: 0},
		{items: 5000, after: 9 * time.Second, held: time.Second}, // capped at 10s
		{items: 5000, after: 10 * time.Second, held: 0},
	} {
		write, held := th.Decide("a", progress(c.items), t0.Add(c.after))
		if held != c.held || write != (c.held == 0) {
			t.Errorf("%d items %s after a write: write=%v held %s, want held %s", c.items, c.after, write, held, c.held)
		}
	}
	if write, _ := th.Decide("a", Change{Changed: true, Progress: Progress{Items: 5000}}, t0.Add(time.Millisecond)); !write {
		t.Error("a change that is not progress alone is never held")
	}
}
