package report

import (
	"testing"
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

const ms = time.Millisecond

// The RTO of a completed failover runs from its first phase to Completed.
func TestLastFailoverRTO(t *testing.T) {
	done := request("fr-1", "u1", "Pending", 1*h, "StoppingOnSource", 1*h+500*ms,
		"WaitingForDRBD", 1*h+10250*ms, "StartingOnTarget", 1*h+12*s, "Completed", 1*h+47125*ms)
	older := request("fr-0", "u0", "Pending", 0*h, "StoppingOnSource", 1*s, "Failed", 9*s)
	open := request("fr-2", "u2", "Pending", 3*h, "StoppingOnSource", 3*h+s)
	f := Build(Input{From: t0, To: at(24 * h), Now: at(24 * h), Groups: []srvGroup{group("db", -h)},
		Requests: []srv1alpha1.FailoverRequest{older, done, open}}).Groups[0].LastFailover
	if f == nil || f.Name != "fr-1" || f.Outcome != "Completed" || f.RTOSeconds == nil || *f.RTOSeconds != 47.125 {
		t.Fatalf("last failover %+v, want fr-1 Completed in 47.125s", f)
	}
	want := []PhaseDuration{{"Pending", 0.5}, {"StoppingOnSource", 9.75}, {"WaitingForDRBD", 1.75}, {"StartingOnTarget", 35.125}}
	if len(f.Phases) != len(want) {
		t.Fatalf("phases %+v, want %+v", f.Phases, want)
	}
	for i := range want {
		if f.Phases[i] != want[i] {
			t.Fatalf("phase %d: %+v, want %+v", i, f.Phases[i], want[i])
		}
	}
}

// A deleted request is read from the group's history; a newer Failed one
// has no RTO; a record of a live request is not counted twice.
func TestLastFailoverFromHistory(t *testing.T) {
	pg := group("db", -h)
	live := request("fr-1", "u1", "Pending", 1*h, "Completed", 1*h+20*s)
	pg.Status.History = []srv1alpha1.RequestRecord{
		{Kind: "FailoverRequest", Name: "fr-1", UID: "u1", Outcome: "Completed", CompletionTime: mt(1*h + 20*s)},
		{Kind: "FailoverRequest", Name: "fr-gone", UID: "u9", Type: "unplanned", TargetCluster: "dr-cluster", Outcome: "Completed",
			StartTime: mt(5 * h), CompletionTime: mt(5*h + 64*s),
			Phases: transitions("Pending", 5*h, "StartingOnTarget", 5*h+3*s, "Completed", 5*h+61500*ms)},
		{Kind: "ProtectionRequest", Name: "pr", Outcome: "Completed", CompletionTime: mt(9 * h)},
	}
	f := Build(Input{From: t0, To: at(24 * h), Now: at(24 * h), Groups: []srvGroup{pg},
		Requests: []srv1alpha1.FailoverRequest{live}}).Groups[0].LastFailover
	if f.Name != "fr-gone" || !f.FromHistory || f.RTOSeconds == nil || *f.RTOSeconds != 61.5 {
		t.Fatalf("last failover %+v, want fr-gone from history in 61.5s", f)
	}

	failed := request("fr-3", "u3", "Pending", 7*h, "StoppingOnSource", 7*h+s, "Failed", 7*h+30*s)
	f = Build(Input{From: t0, To: at(24 * h), Now: at(24 * h), Groups: []srvGroup{pg},
		Requests: []srv1alpha1.FailoverRequest{live, failed}}).Groups[0].LastFailover
	if f.Name != "fr-3" || f.Outcome != "Failed" || f.RTOSeconds != nil {
		t.Fatalf("last failover %+v, want fr-3 Failed without RTO", f)
	}
}
