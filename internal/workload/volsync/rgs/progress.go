package rgs

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// DefaultHoldAfter is how long a step of a cycle reports one summary message
// before its message names the PVCs it still waits on. A normal step ends well
// within it, and a message that changed each time one PVC bound or synced cost
// one status write per PVC and step, for text nobody reads in a normal cycle.
const DefaultHoldAfter = 15 * time.Second

// stepReasons are the waits every normal cycle passes through, each with the
// summary it reports while it is young. Failures (a snapshot error, a failing
// source) are not among them: they are named at once.
var stepReasons = map[string]func(s *scope) string{
	ReasonSnapshotNotReady: func(s *scope) string {
		return fmt.Sprintf("cycle %s: taking a snapshot of %d PVCs", s.cycle(), len(s.pvcs))
	},
	ReasonRestoreNotBound: func(s *scope) string {
		return fmt.Sprintf("cycle %s: restoring %d PVCs", s.cycle(), len(s.members))
	},
	srv1alpha1.ReasonSyncing: func(s *scope) string {
		return fmt.Sprintf("cycle %s: syncing %d PVCs", s.cycle(), len(s.members))
	},
}

// IsCycleStep reports whether a Ready reason of a ReplicationGroupSource is a
// wait of a normal cycle rather than a problem of its replication.
func IsCycleStep(reason string) bool {
	_, ok := stepReasons[reason]
	return ok
}

// steps remembers when each group's cycle entered its current step. It lives
// in memory: after a restart a step counts from the first reconcile that sees
// it, which at worst delays the detailed message by one hold.
type steps struct {
	mu    sync.Mutex
	since map[types.NamespacedName]step
}

type step struct {
	cycle, reason string
	since         time.Time
}

// enter records that key's cycle is in reason's step at now and returns when
// the step began.
func (t *steps) enter(key types.NamespacedName, cycle, reason string, now time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.since == nil {
		t.since = map[types.NamespacedName]step{}
	}
	if st, ok := t.since[key]; ok && st.cycle == cycle && st.reason == reason {
		return st.since
	}
	t.since[key] = step{cycle: cycle, reason: reason, since: now}
	return now
}

func (t *steps) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.since, key)
}

// stepMessage is the Ready message of a cycle waiting in a normal step: the
// step's summary while the step is younger than hold, then the wait's own
// message, which names the PVCs. recheck is when the summary turns into the
// detail, zero when nothing is to be looked at again.
func (r *Reconciler) stepMessage(s *scope, err error) (msg string, recheck time.Duration, ok bool) {
	e := flow.As(err)
	if e == nil || e.Kind != flow.KindWaiting || s.cycle() == "" {
		return "", 0, false
	}
	summary, ok := stepReasons[e.Reason]
	if !ok {
		return "", 0, false
	}
	hold := r.HoldAfter
	if hold <= 0 {
		hold = DefaultHoldAfter
	}
	since := r.steps.enter(s.key(), s.cycle(), e.Reason, s.now)
	if age := s.now.Sub(since); age < hold {
		return summary(s), hold - age, true
	}
	return fmt.Sprintf("cycle %s: %s", s.cycle(), e.Error()), 0, true
}
