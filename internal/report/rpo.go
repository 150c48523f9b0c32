package report

import (
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// RPO is how well a group met its RPO objective over the window.
type RPO struct {
	ObjectiveSeconds int32 `json:"objectiveSeconds"`
	// MeasuredFrom and MeasuredTo are the part of the window measured: from
	// the window's start or the group's creation, whichever is later, to the
	// window's end or now, whichever is earlier.
	MeasuredFrom metav1.Time `json:"measuredFrom"`
	MeasuredTo   metav1.Time `json:"measuredTo"`
	// MeasuredSeconds and BreachSeconds: the breach time is the union of the
	// RPOEvents' episodes clipped to the measured span; an Active episode
	// runs to now.
	MeasuredSeconds float64 `json:"measuredSeconds"`
	BreachSeconds   float64 `json:"breachSeconds"`
	// MetRatio is 1 - BreachSeconds/MeasuredSeconds; absent when nothing
	// could be measured (Note says why).
	MetRatio *float64 `json:"metRatio,omitempty"`
	// Episodes counts the episodes that overlap the measured span.
	Episodes int `json:"episodes"`
	// Worst is the overlapping episode with the highest peak lag (the
	// longer one on a tie).
	Worst *Episode `json:"worst,omitempty"`
	// Note says what the figures could not cover.
	Note string `json:"note,omitempty"`
}

// Episode is one RPOEvent: the lag above the objective from Start to End.
type Episode struct {
	Name  string       `json:"name"`
	Start metav1.Time  `json:"start"`
	End   *metav1.Time `json:"end,omitempty"`
	// Active is true while the lag still exceeds the objective.
	Active bool `json:"active"`
	// DurationSeconds is the whole episode's, not only its part in the
	// window; an Active one's runs to now.
	DurationSeconds float64 `json:"durationSeconds"`
	PeakLagSeconds  int64   `json:"peakLagSeconds"`
}

type span struct{ from, to time.Time }

func rpoOf(pg *srv1alpha1.ProtectionGroup, in Input) RPO {
	from, to := in.From, in.To
	if in.Now.Before(to) {
		to = in.Now
	}
	out := RPO{ObjectiveSeconds: pg.Spec.Replication.RPOObjectiveSeconds}
	var notes []string
	if created := pg.CreationTimestamp.Time; created.After(from) {
		from = created
		notes = append(notes, fmt.Sprintf("created %s, inside the window: measured from its creation", created.UTC().Format(time.RFC3339)))
	}
	if to.Before(from) {
		to = from
	}
	out.MeasuredFrom, out.MeasuredTo = metav1.NewTime(from), metav1.NewTime(to)
	measured := to.Sub(from)
	out.MeasuredSeconds = seconds(measured)

	var clipped []span
	var newest *srv1alpha1.RPOEvent
	for i := range in.Events {
		ev := &in.Events[i]
		if ev.Spec.ProtectionGroupRef.Name != pg.Name {
			continue
		}
		if newest == nil || ev.Spec.StartTime.After(newest.Spec.StartTime.Time) {
			newest = ev
		}
		e := episodeOf(ev, in.Now)
		end := in.Now
		if e.End != nil {
			end = e.End.Time
		}
		s := span{maxTime(e.Start.Time, from), minTime(end, to)}
		if !s.to.After(s.from) {
			continue
		}
		clipped = append(clipped, s)
		out.Episodes++
		if w := out.Worst; w == nil || e.PeakLagSeconds > w.PeakLagSeconds ||
			(e.PeakLagSeconds == w.PeakLagSeconds && e.DurationSeconds > w.DurationSeconds) {
			out.Worst = &e
		}
	}
	if out.ObjectiveSeconds == 0 {
		out.ObjectiveSeconds = DefaultRPOObjectiveSeconds
		if newest != nil {
			out.ObjectiveSeconds = newest.Spec.RPOObjectiveSeconds
		}
	}
	out.BreachSeconds = seconds(union(clipped))
	if measured <= 0 {
		notes = append(notes, "nothing to measure: the window ends before the group existed or before it starts")
	} else {
		ratio := 1 - float64(union(clipped))/float64(measured)
		out.MetRatio = &ratio
	}
	out.Note = joinNotes(notes)
	return out
}

func episodeOf(ev *srv1alpha1.RPOEvent, now time.Time) Episode {
	e := Episode{Name: ev.Name, Start: ev.Spec.StartTime, PeakLagSeconds: ev.Status.PeakLagSeconds}
	end := now
	if ev.Status.State == srv1alpha1.RPOEventResolved && ev.Status.EndTime != nil {
		e.End = ev.Status.EndTime.DeepCopy()
		end = e.End.Time
	} else {
		// Active, or not yet given a state by the monitor: it runs until now.
		e.Active = true
	}
	e.DurationSeconds = seconds(max(end.Sub(e.Start.Time), 0))
	return e
}

// union is the time covered by the spans, counting overlaps once.
func union(spans []span) time.Duration {
	sort.Slice(spans, func(i, j int) bool { return spans[i].from.Before(spans[j].from) })
	var total time.Duration
	var cur *span
	for i := range spans {
		s := spans[i]
		switch {
		case cur == nil:
			cur = &s
		case s.from.After(cur.to):
			total += cur.to.Sub(cur.from)
			cur = &s
		case s.to.After(cur.to):
			cur.to = s.to
		}
	}
	if cur != nil {
		total += cur.to.Sub(cur.from)
	}
	return total
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func joinNotes(notes []string) string {
	out := ""
	for i, n := range notes {
		if i > 0 {
			out += "; "
		}
		out += n
	}
	return out
}
