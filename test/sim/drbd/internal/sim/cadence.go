package sim

import (
	"strings"
	"time"
)

// RSProgressStep is how often DRBD reports a resync's progress: at most once
// every DRBD_SYNC_MARK_STEP, 3 seconds (drbd_advance_rs_marks in LINBIT/drbd,
// drbd/drbd_actlog.c, posts RS_PROGRESS, which drbd_sender.c broadcasts).
const RSProgressStep = 3 * time.Second

// statistics are the fields `events2 --statistics` prints with an object
// whose change alone DRBD does not broadcast. The kernel sends an object's
// statistics with a state change of it (notify_*_state_change in
// drbd/drbd_state.c) and with a resync's progress report, nowhere else: a
// Primary writing while its peer is away, or a protocol A window filling,
// emits nothing, and only `drbdsetup status` or `events2 --now` tells the
// current figures.
var statistics = map[string]bool{
	"size": true, "read": true, "written": true, "al-writes": true, "bm-writes": true,
	"upper-pending": true, "lower-pending": true, "al-suspended": true, "blocked": true,
	"ap-in-flight": true, "rs-in-flight": true,
	"done": true, "received": true, "sent": true, "out-of-sync": true, "pending": true, "unacked": true,
}

// stateOf is an object's fields without its statistics.
func stateOf(fields string) string {
	kept := make([]string, 0, 8)
	for f := range strings.FieldsSeq(fields) {
		if k, _, ok := strings.Cut(f, ":"); ok && statistics[k] {
			continue
		}
		kept = append(kept, f)
	}
	return strings.Join(kept, " ")
}

// resyncing reports whether a peer-device's fields show a resync running.
func resyncing(fields string) bool {
	return strings.Contains(fields, "replication:Sync") || strings.Contains(fields, "replication:PausedSync")
}

// cadence decides which changes a stream broadcasts: a state change with the
// statistics of its moment, and a running resync's progress once every
// RSProgressStep; a change of statistics alone is held back, so the
// object's last broadcast stays what a listener knows.
type cadence struct {
	progressAt map[string]time.Time // last progress report per peer-device
}

// broadcast returns cur with each object whose change DRBD would not
// broadcast now carrying its fields as last broadcast (in prev): diffing
// prev against the result prints what DRBD prints.
func (c *cadence) broadcast(prev, cur []object, now time.Time) []object {
	if c.progressAt == nil {
		c.progressAt = map[string]time.Time{}
	}
	last := make(map[string]string, len(prev))
	for _, o := range prev {
		last[o.key] = o.fields
	}
	out := make([]object, len(cur))
	for i, o := range cur {
		out[i] = o
		old, known := last[o.key]
		if !known || old == o.fields {
			continue
		}
		if stateOf(old) != stateOf(o.fields) {
			c.progressAt[o.key] = now
			continue
		}
		if resyncing(o.fields) && now.Sub(c.progressAt[o.key]) >= RSProgressStep {
			c.progressAt[o.key] = now
			continue
		}
		out[i].fields = old
	}
	return out
}
