package drill

import (
	"time"

	"github.com/robfig/cron/v3"
)

// lookBack are the windows latestSlot searches, shortest first: a slot is
// found in the first that holds one, in at most a few hundred steps.
var lookBack = []time.Duration{time.Hour, 24 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour}

// latestSlot is the latest slot of s in [due, now], given due is a slot not
// after now: after downtime only the newest missed slot runs.
func latestSlot(s cron.Schedule, due, now time.Time) time.Time {
	start := due
	for _, w := range lookBack {
		if from := now.Add(-w); from.After(due) {
			if first := s.Next(from.Add(-time.Nanosecond)); !first.IsZero() && !first.After(now) {
				start = first
				break
			}
		}
	}
	slot := start
	for next := s.Next(slot); !next.IsZero() && !next.After(now); next = s.Next(slot) {
		slot = next
	}
	return slot
}

// isSlot reports whether t is a slot of s.
func isSlot(s cron.Schedule, t time.Time) bool {
	return s.Next(t.Add(-time.Second)).Equal(t)
}
