package nodeagent

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Coalescer bounds status writes: per key at most one write per interval, and only
// when the status differs semantically from the last one written.
//
// Contract, for a caller that asks Decide with the latest status on every change and
// again after every returned wait:
//   - an unchanged status is never written;
//   - two writes of one key are at least interval apart;
//   - the last change is never lost: a change inside the interval gets a wait, and
//     the call after that wait writes it (a trailing write).
type Coalescer struct {
	clock    clock.PassiveClock
	interval time.Duration

	mu   sync.Mutex
	last map[string]writtenStatus
}

type writtenStatus struct {
	status srv1alpha1.DRBDResourceStatus // normalised, see normalise
	at     time.Time
}

// NewCoalescer returns a Coalescer allowing one write per interval per key.
func NewCoalescer(clk clock.PassiveClock, interval time.Duration) *Coalescer {
	return &Coalescer{clock: clk, interval: interval, last: map[string]writtenStatus{}}
}

// Decide says what to do with want for key. current is the status as read from the
// API server; it only counts while the Coalescer has not written key itself (after
// a restart), because a cache may lag behind the Coalescer's own writes.
//
// write: write want now, then call Written. wait > 0: want differs but the interval
// has not passed; call Decide again after wait with the then-latest status. Both
// zero: nothing to write.
func (c *Coalescer) Decide(key string, want, current *srv1alpha1.DRBDResourceStatus) (write bool, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.last[key]
	if !ok {
		return !StatusEqual(want, current), 0
	}
	if norm := normalise(want); equality.Semantic.DeepEqual(&norm, &last.status) {
		return false, 0
	}
	if elapsed := c.clock.Since(last.at); elapsed < c.interval {
		return false, c.interval - elapsed
	}
	return true, 0
}

// Written records that st was written for key now.
func (c *Coalescer) Written(key string, st *srv1alpha1.DRBDResourceStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last[key] = writtenStatus{status: normalise(st), at: c.clock.Now()}
}

// Last returns the status last written for key, if any.
func (c *Coalescer) Last(key string) (srv1alpha1.DRBDResourceStatus, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.last[key]
	return w.status, ok
}

// Forget drops what the Coalescer knows about key (the object is gone).
func (c *Coalescer) Forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.last, key)
}

// StatusEqual compares two statuses semantically, ignoring lastUpdateTime and the
// conditions' lastTransitionTime (which a stale cached copy may disagree on).
func StatusEqual(a, b *srv1alpha1.DRBDResourceStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	return equality.Semantic.DeepEqual(normalise(a), normalise(b))
}

// normalise returns a deep copy without the fields StatusEqual ignores.
func normalise(st *srv1alpha1.DRBDResourceStatus) srv1alpha1.DRBDResourceStatus {
	out := *st.DeepCopy()
	out.LastUpdateTime = nil
	for i := range out.Conditions {
		out.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return out
}
