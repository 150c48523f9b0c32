package nodeagent

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

func statusWithSync(pct int) *srv1alpha1.DRBDResourceStatus {
	return &srv1alpha1.DRBDResourceStatus{Role: "Secondary", Peers: []srv1alpha1.DRBDPeerStatus{{NodeName: "b",
		Volumes: []srv1alpha1.DRBDPeerVolumeStatus{{Number: 0, PercentInSync: fmt.Sprintf("%d.00", pct)}}}}}
}

func TestCoalescerContract(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	c := NewCoalescer(clk, time.Second)
	const key = "ns/r"
	empty := &srv1alpha1.DRBDResourceStatus{}

	write, wait := c.DecideStatus(key, empty, empty)
	assert.False(t, write, "nothing to write when equal to the object's status")
	assert.Zero(t, wait)

	s1 := statusWithSync(1)
	write, _ = c.DecideStatus(key, s1, empty)
	require.True(t, write, "first change is written at once")
	c.WrittenStatus(key, s1)

	// Unchanged (up to lastUpdateTime and transition times): never written.
	same := s1.DeepCopy()
	now := metav1.NewTime(clk.Now())
	same.LastUpdateTime = &now
	clk.Step(5 * time.Second)
	write, wait = c.DecideStatus(key, same, empty)
	assert.False(t, write)
	assert.Zero(t, wait)

	// A change is written, the next ones within the interval wait.
	write, _ = c.DecideStatus(key, statusWithSync(2), empty)
	require.True(t, write)
	c.WrittenStatus(key, statusWithSync(2))
	clk.Step(300 * time.Millisecond)
	write, wait = c.DecideStatus(key, statusWithSync(3), empty)
	assert.False(t, write)
	assert.Equal(t, 700*time.Millisecond, wait)
	clk.Step(200 * time.Millisecond)
	write, wait = c.DecideStatus(key, statusWithSync(4), empty) // newest state, still too early
	assert.False(t, write)
	assert.Equal(t, 500*time.Millisecond, wait)

	// Trailing write: after the wait the latest status goes out.
	clk.Step(wait)
	write, _ = c.DecideStatus(key, statusWithSync(4), empty)
	require.True(t, write, "the last change is never lost")
	c.WrittenStatus(key, statusWithSync(4))
	last, ok := c.Last(key)
	require.True(t, ok)
	assert.True(t, StatusEqual(&last, statusWithSync(4)))

	// Flip back to a previous value inside the interval is a change too.
	write, wait = c.DecideStatus(key, statusWithSync(2), statusWithSync(2))
	assert.False(t, write)
	assert.Equal(t, time.Second, wait, "compared with the last write, not a stale cache")

	c.Forget(key)
	_, ok = c.Last(key)
	assert.False(t, ok)
}

// simulateCoalescing drives n resources that each change every 100ms for the
// simulated duration, like a reconciler would: Decide on every change and again
// after each returned wait. It returns the number of writes within the duration and
// checks that every resource's last state was written afterwards.
func simulateCoalescing(tb testing.TB, n int, duration time.Duration) (writes int) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	c := NewCoalescer(clk, time.Second)
	keys := make([]string, n)
	latest := make([]*srv1alpha1.DRBDResourceStatus, n)
	retryAt := make([]time.Time, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/r%d", i)
		latest[i] = &srv1alpha1.DRBDResourceStatus{}
	}
	offer := func(i int) {
		write, wait := c.DecideStatus(keys[i], latest[i], &srv1alpha1.DRBDResourceStatus{})
		switch {
		case write:
			c.WrittenStatus(keys[i], latest[i])
			writes++
			retryAt[i] = time.Time{}
		case wait > 0 && (retryAt[i].IsZero() || clk.Now().Add(wait).Before(retryAt[i])):
			retryAt[i] = clk.Now().Add(wait)
		}
	}
	const step = 10 * time.Millisecond
	start := clk.Now()
	for tick := 0; clk.Since(start) < duration; tick++ {
		for i := range keys {
			// Resource i changes every 100ms at its own offset within the period.
			if tick%10 == i%10 {
				latest[i] = statusWithSync(tick % 100)
				offer(i)
			} else if !retryAt[i].IsZero() && !clk.Now().Before(retryAt[i]) {
				offer(i)
			}
		}
		clk.Step(step)
	}
	inWindow := writes
	// After the changes stop, the pending trailing writes go out.
	clk.Step(time.Second)
	for i := range keys {
		if !retryAt[i].IsZero() {
			offer(i)
		}
		last, ok := c.Last(keys[i])
		if !ok || !StatusEqual(&last, latest[i]) {
			tb.Fatalf("resource %d: last change lost", i)
		}
	}
	return inWindow
}

func TestCoalescerBoundsWrites(t *testing.T) {
	writes := simulateCoalescing(t, 100, 10*time.Second)
	assert.LessOrEqual(t, writes, 100*10, "at most one write per resource per second")
	assert.GreaterOrEqual(t, writes, 100*9, "but changes keep being written")
}

// BenchmarkStatusCoalescing: 1,000 resources each changing 10 times a second for 10
// simulated seconds; reports the status writes per simulated second (must be <= 1000).
func BenchmarkStatusCoalescing(b *testing.B) {
	const resources, seconds = 1000, 10
	var writes int
	for b.Loop() {
		writes = simulateCoalescing(b, resources, seconds*time.Second)
	}
	perSec := float64(writes) / seconds
	b.ReportMetric(perSec, "writes/s")
	b.ReportMetric(float64(resources*10), "changes/s")
	if perSec > 1000 {
		b.Fatalf("%.0f writes/s exceeds 1000", perSec)
	}
}
