package report

import (
	"math"
	"testing"
	"time"
)

const h = time.Hour

func ratio(t *testing.T, r RPO) float64 {
	t.Helper()
	if r.MetRatio == nil {
		t.Fatalf("no ratio; note %q", r.Note)
	}
	return *r.MetRatio
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Episodes that cross the window's edges count only their part inside it;
// one wholly outside does not count; the worst is by peak lag.
func TestRPOEpisodesClippedToWindow(t *testing.T) {
	r := Build(Input{Namespace: "dr", From: t0, To: at(24 * h), Now: at(30 * h),
		Groups: []srvGroup{group("db", -48*h)},
		Events: []srvEvent{
			resolved("before", "db", -5*h, -4*h, 5000),   // outside
			resolved("start-edge", "db", -1*h, 1*h, 900), // 1h inside
			resolved("middle", "db", 10*h, 10*h+30*time.Minute, 1200),
			resolved("end-edge", "db", 23*h, 25*h, 400), // 1h inside
			resolved("other-group", "web", 2*h, 3*h, 99999),
		}})
	g := groupOf(t, r, "db").RPO
	if g.MeasuredSeconds != 86400 || g.BreachSeconds != 9000 || g.Episodes != 3 {
		t.Fatalf("measured %v breach %v episodes %d, want 86400 9000 3", g.MeasuredSeconds, g.BreachSeconds, g.Episodes)
	}
	if got, want := ratio(t, g), 1-9000.0/86400; !near(got, want) {
		t.Fatalf("ratio %v, want %v", got, want)
	}
	if w := g.Worst; w == nil || w.Name != "middle" || w.PeakLagSeconds != 1200 || w.DurationSeconds != 1800 || w.Active {
		t.Fatalf("worst %+v, want middle: peak 1200, 1800s, resolved", w)
	}
	if g.Note != "" || g.ObjectiveSeconds != 300 {
		t.Fatalf("note %q objective %d", g.Note, g.ObjectiveSeconds)
	}
}

// A group created inside the window is measured from its creation, and an
// Active episode runs to now, which ends the measured span too.
func TestRPOActiveEpisodeAndGroupCreatedInWindow(t *testing.T) {
	r := Build(Input{From: t0, To: at(24 * h), Now: at(20 * h),
		Groups: []srvGroup{group("web", 12*h)},
		Events: []srvEvent{active("open", "web", 18*h, 700)}})
	g := groupOf(t, r, "web").RPO
	if g.MeasuredSeconds != 8*3600 || g.BreachSeconds != 2*3600 || !near(ratio(t, g), 0.75) {
		t.Fatalf("measured %v breach %v ratio %v, want 28800 7200 0.75", g.MeasuredSeconds, g.BreachSeconds, *g.MetRatio)
	}
	if w := g.Worst; w == nil || !w.Active || w.End != nil || w.DurationSeconds != 7200 || w.PeakLagSeconds != 700 {
		t.Fatalf("worst %+v, want the active episode of 7200s", w)
	}
	if g.Note != "created 2026-01-01T12:00:00Z, inside the window: measured from its creation" {
		t.Fatalf("note %q", g.Note)
	}
	if !g.MeasuredFrom.Time.Equal(at(12*h)) || !g.MeasuredTo.Time.Equal(at(20*h)) {
		t.Fatalf("measured %v to %v", g.MeasuredFrom, g.MeasuredTo)
	}
}

// Episodes that overlap each other are counted once.
func TestRPOOverlappingEpisodesCountedOnce(t *testing.T) {
	r := Build(Input{From: t0, To: at(10 * h), Now: at(10 * h), Groups: []srvGroup{group("db", -h)},
		Events: []srvEvent{resolved("a", "db", 1*h, 3*h, 400), resolved("b", "db", 2*h, 4*h, 500), resolved("c", "db", 6*h, 7*h, 450)}})
	g := groupOf(t, r, "db").RPO
	if g.BreachSeconds != 4*3600 || !near(ratio(t, g), 0.6) || g.Worst.Name != "b" {
		t.Fatalf("breach %v ratio %v worst %s, want 14400 0.6 b", g.BreachSeconds, *g.MetRatio, g.Worst.Name)
	}
}

// No episodes: the objective was met all the time; a group that did not
// exist in the window has no ratio, and the note says why.
func TestRPONoData(t *testing.T) {
	r := Build(Input{From: t0, To: at(24 * h), Now: at(48 * h),
		Groups: []srvGroup{group("quiet", -h), group("later", 30*h)}})
	q := groupOf(t, r, "quiet")
	if !near(ratio(t, q.RPO), 1) || q.RPO.Worst != nil || q.RPO.Episodes != 0 || q.LastDrill != nil || q.LastFailover != nil || q.LastSuccessfulDrillTime != nil {
		t.Fatalf("quiet group %+v, want ratio 1 and nothing else", q)
	}
	l := groupOf(t, r, "later").RPO
	if l.MetRatio != nil || l.MeasuredSeconds != 0 || l.Note == "" {
		t.Fatalf("later group %+v, want no ratio and a note", l)
	}
	if r.Groups[0].Name != "later" || r.Groups[1].Name != "quiet" {
		t.Fatalf("groups not in name order: %s, %s", r.Groups[0].Name, r.Groups[1].Name)
	}
}

// A group without an objective of its own reports the monitor's default.
func TestRPODefaultObjective(t *testing.T) {
	pg := group("db", -h)
	pg.Spec.Replication.RPOObjectiveSeconds = 0
	r := Build(Input{From: t0, To: at(h), Now: at(h), Groups: []srvGroup{pg}})
	if got := r.Groups[0].RPO.ObjectiveSeconds; got != DefaultRPOObjectiveSeconds {
		t.Fatalf("objective %d, want %d", got, DefaultRPOObjectiveSeconds)
	}
}
