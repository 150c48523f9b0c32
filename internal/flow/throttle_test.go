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
