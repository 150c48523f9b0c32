package benchpair

import (
	"testing"
	"time"
)

func round(wall, cpu time.Duration) Round {
	return Round{Wall: wall, CPU: map[string]time.Duration{"kube-apiserver": cpu / 2, "test": cpu / 2}}
}

// A floor round whose wall time per CPU second is far above the others' is a
// stall of the machine: its pair is dropped, the others are kept.
func TestMarkStalls(t *testing.T) {
	r := Result{Pairs: []Pair{
		{Floor: round(700*time.Millisecond, time.Second), Product: round(time.Second, 2*time.Second)},
		{Floor: round(650*time.Millisecond, 900*time.Millisecond), Product: round(time.Second, 2*time.Second)},
		{Floor: round(1450*time.Millisecond, 500*time.Millisecond), Product: round(time.Second, 2*time.Second)},
		{Floor: round(800*time.Millisecond, time.Second), Product: round(time.Second, 2*time.Second)},
	}}
	r.markStalls()
	var stalled []int
	for i, p := range r.Pairs {
		if p.Stalled {
			stalled = append(stalled, i)
		}
	}
	if len(stalled) != 1 || stalled[0] != 2 {
		t.Fatalf("stalled pairs %v, want [2]", stalled)
	}
	if len(r.Kept()) != 3 {
		t.Fatalf("kept %d pairs, want 3", len(r.Kept()))
	}
}

// Without /proc no CPU time is known: nothing is dropped.
func TestMarkStallsWithoutCPU(t *testing.T) {
	r := Result{Pairs: []Pair{{Floor: Round{Wall: time.Second}}, {Floor: Round{Wall: 5 * time.Second}}}}
	r.markStalls()
	if len(r.Kept()) != 2 {
		t.Fatalf("kept %d pairs, want 2", len(r.Kept()))
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := medianFloat(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
