package protectiongroup

import (
	"sync"
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// A group in transition (its currentState is not yet its desiredState) holds
// its status write for settleWait after this controller asked its VMs or
// replicas to change. Their answers usually come within that time (KubeVirt
// deleting or creating the instances, the agents reporting the new role), and
// each wakes the group: the status then goes out once, in the state they lead
// to, instead of once per step on the way (stopping, then stopped). A group
// that reaches its desired state is written at once, whatever the window: the
// quorum tier waits on exactly that write. A write is never held longer than
// longestSettle, so a controller that keeps asking (a fight with another
// writer of the VMs) still reports its group at least that often.
const (
	settleWait    = 200 * time.Millisecond
	longestSettle = time.Second
)

// settleWindows are the groups' windows, by "namespace/name".
type settleWindows struct {
	mu      sync.Mutex
	windows map[string]settleWindow
}

// settleWindow: writes wait until until; heldSince is when the write now
// waiting was first held (zero when none is).
type settleWindow struct{ until, heldSince time.Time }

// asked opens the window of key at now, or extends it.
func (w *settleWindows) asked(key string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.windows == nil {
		w.windows = map[string]settleWindow{}
	}
	cur := w.windows[key]
	if !now.Before(cur.until) {
		cur = settleWindow{} // the last window has closed: a new one begins
	}
	cur.until = now.Add(settleWait)
	w.windows[key] = cur
}

// wrote ends the hold of key: its status went out.
func (w *settleWindows) wrote(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur, ok := w.windows[key]; ok {
		cur.heldSince = time.Time{}
		w.windows[key] = cur
	}
}

// wait is how long a status write of key in transition must wait at now; zero
// means write it now.
func (w *settleWindows) wait(key string, now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	cur, ok := w.windows[key]
	if !ok || !now.Before(cur.until) {
		delete(w.windows, key)
		return 0
	}
	if cur.heldSince.IsZero() {
		cur.heldSince = now
	}
	longest := cur.heldSince.Add(longestSettle)
	if !now.Before(longest) {
		cur.heldSince = time.Time{}
		w.windows[key] = cur
		return 0
	}
	w.windows[key] = cur
	return minTime(cur.until, longest).Sub(now)
}

// forget drops the window of a deleted group.
func (w *settleWindows) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.windows, key)
}

// inTransition reports whether the group's state has not reached what its
// spec asks.
func inTransition(g *srv1alpha1.ProtectionGroup) bool {
	return g.Spec.DesiredState != "" && g.Status.CurrentState != g.Spec.DesiredState
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
