package report

import (
	"testing"
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

const s = time.Second

// The newest drill is reported with its checks; its RTO runs from its start
// to its last check passing.
func TestLastDrillScheduledPassed(t *testing.T) {
	old := drill("manual-1", "db", false, srv1alpha1.TestFailoverSucceeded, 2*h)
	old.Status.CompletionTime = mt(2*h + 300*s)
	d := drill("db-drill-1", "db", true, srv1alpha1.TestFailoverSucceeded, 5*h)
	d.Status.Results = []srv1alpha1.CheckResult{result("VMReady", true, 5*h+40*s), result("Probe", true, 5*h+95*s)}
	d.Status.CompletionTime = mt(5*h + 130*s)
	other := drill("web-drill", "web", true, srv1alpha1.TestFailoverSucceeded, 9*h)
	g := Build(Input{From: t0, To: at(24 * h), Now: at(24 * h), Groups: []srvGroup{group("db", -h)},
		TestFailovers: []srv1alpha1.TestFailover{d, old, other}}).Groups[0]
	l := g.LastDrill
	if l == nil || l.Name != "db-drill-1" || !l.Scheduled || !l.Passed || l.Phase != "Succeeded" || len(l.Checks) != 2 {
		t.Fatalf("last drill %+v, want db-drill-1 scheduled, passed, 2 checks", l)
	}
	if l.RTOSeconds == nil || *l.RTOSeconds != 95 {
		t.Fatalf("drill RTO %v, want 95", l.RTOSeconds)
	}
	if g.LastSuccessfulDrillTime == nil || !g.LastSuccessfulDrillTime.Time.Equal(at(5*h+130*s)) {
		t.Fatalf("last success %v, want the drill's completion", g.LastSuccessfulDrillTime)
	}
}

// A drill that failed a check has no RTO, says so, and leaves the last
// success at the drill before it; the schedule's record counts when newer.
func TestLastDrillFailedCheck(t *testing.T) {
	ok := drill("db-drill-1", "db", true, srv1alpha1.TestFailoverSucceeded, 2*h)
	ok.Status.CompletionTime = mt(2*h + 60*s)
	// Started with kubectl siterecovery drill: the drill label (retention
	// counts it), but no schedule slot.
	bad := drill("db-drill-manual-20261206060000", "db", false, srv1alpha1.TestFailoverFailed, 6*h)
	bad.Labels = map[string]string{srv1alpha1.DrillLabel: "db"}
	bad.Status.Results = []srv1alpha1.CheckResult{result("VMReady", true, 6*h+30*s), result("Probe", false, 6*h+90*s)}
	g := Build(Input{From: t0, To: at(24 * h), Now: at(24 * h), Groups: []srvGroup{group("db", -h)},
		TestFailovers: []srv1alpha1.TestFailover{ok, bad}}).Groups[0]
	l := g.LastDrill
	if l.Name != "db-drill-manual-20261206060000" || l.Scheduled || l.Passed || l.RTOSeconds != nil || l.Note != "no RTO: a check failed" {
		t.Fatalf("last drill %+v, want the failed manual one without RTO", l)
	}
	if c := l.Checks[1]; c.Check != "Probe" || c.Passed || c.Message != "Probe on db-vm" {
		t.Fatalf("check %+v", c)
	}
	if !g.LastSuccessfulDrillTime.Time.Equal(at(2*h + 60*s)) {
		t.Fatalf("last success %v, want 02:01:00", g.LastSuccessfulDrillTime)
	}

	pg := group("db", -h)
	pg.Status.Drill = &srv1alpha1.DrillStatus{LastSuccessfulTime: mt(4 * h)}
	g = Build(Input{From: t0, To: at(24 * h), Now: at(24 * h), Groups: []srvGroup{pg},
		TestFailovers: []srv1alpha1.TestFailover{ok, bad}}).Groups[0]
	if !g.LastSuccessfulDrillTime.Time.Equal(at(4 * h)) {
		t.Fatalf("last success %v, want the schedule's 04:00:00", g.LastSuccessfulDrillTime)
	}
}

// A drill still verifying has no RTO yet.
func TestLastDrillInProgress(t *testing.T) {
	d := drill("db-drill-2", "db", true, srv1alpha1.TestFailoverVerifying, 3*h)
	d.Status.Results = []srv1alpha1.CheckResult{result("VMReady", true, 3*h+20*s)}
	l := Build(Input{From: t0, To: at(24 * h), Now: at(24 * h), Groups: []srvGroup{group("db", -h)},
		TestFailovers: []srv1alpha1.TestFailover{d}}).Groups[0].LastDrill
	if l.RTOSeconds != nil || l.Passed || l.Note != "no RTO yet: checks are still running" {
		t.Fatalf("drill %+v, want no RTO yet", l)
	}
}
