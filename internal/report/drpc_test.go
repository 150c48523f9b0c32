package report

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// drpc is a DRPC of group db whose action started at start; a nil took
// means it is still in progress.
func drpc(name string, action drv1alpha1.DRAction, phase drv1alpha1.DRState, start time.Duration, took *time.Duration) drv1alpha1.DRPlacementControl {
	d := drv1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dr"},
		Spec: drv1alpha1.DRPlacementControlSpec{ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: "db"},
			PreferredCluster: "primary", FailoverCluster: "dr-cluster", Action: action},
		Status: drv1alpha1.DRPlacementControlStatus{Phase: phase, ActionStartTime: mt(start)}}
	if took != nil {
		d.Status.ActionDuration = &metav1.Duration{Duration: *took}
	}
	return d
}

func took(d time.Duration) *time.Duration { return &d }

// The last failover is the newest finished one among FailoverRequests,
// history records and DRPC actions; a DRPC's RTO is its actionDuration and
// an action in progress is not finished.
func TestLastFailoverAcrossSources(t *testing.T) {
	pg := group("db", -h)
	pg.Status.History = []srv1alpha1.RequestRecord{{Kind: "FailoverRequest", Name: "fr-gone", UID: "u9", Outcome: "Completed",
		StartTime: mt(5 * h), CompletionTime: mt(5*h + 64*s), Phases: transitions("Pending", 5*h, "Completed", 5*h+61500*ms)}}
	live := request("fr-1", "u1", "Pending", 3*h, "Completed", 3*h+20*s)
	relocated := drpc("db-drpc", drv1alpha1.ActionRelocate, drv1alpha1.DRStateRelocated, 7*h, took(93250*ms))
	otherGroup := drpc("web-drpc", drv1alpha1.ActionFailover, drv1alpha1.DRStateFailedOver, 9*h, took(s))
	otherGroup.Spec.ProtectionGroupRef.Name = "web"
	last := func(drpcs ...drv1alpha1.DRPlacementControl) *Failover {
		t.Helper()
		return Build(Input{From: t0, To: at(24 * h), Now: at(24 * h), Groups: []srvGroup{pg},
			Requests: []srv1alpha1.FailoverRequest{live}, DRPCs: drpcs}).Groups[0].LastFailover
	}

	f := last(relocated, otherGroup)
	if f == nil || f.Name != "db-drpc" || f.Kind != KindDRPlacementControl || f.Type != "Relocate" || f.Outcome != "Completed" ||
		f.TargetCluster != "primary" || f.SourceCluster != "dr-cluster" || f.RTOSeconds == nil || *f.RTOSeconds != 93.25 ||
		!f.StartTime.Time.Equal(at(7*h)) || !f.CompletionTime.Time.Equal(at(7*h+93250*ms)) {
		t.Fatalf("last failover %+v, want db-drpc's Relocate to primary in 93.25s", f)
	}

	// A DRPC that moved before the history's record loses to it.
	early := drpc("db-drpc", drv1alpha1.ActionFailover, drv1alpha1.DRStateFailedOver, 4*h, took(30*s))
	if f = last(early); f.Name != "fr-gone" || !f.FromHistory || f.Kind != "FailoverRequest" {
		t.Fatalf("last failover %+v, want fr-gone from history", f)
	}

	// A newer action in progress (started, no duration yet; or the duration
	// of the previous action left while the phase already moved on) is not
	// a finished failover: the history record is still the last.
	for _, open := range []drv1alpha1.DRPlacementControl{
		drpc("db-drpc", drv1alpha1.ActionFailover, drv1alpha1.DRStateFailingOver, 8*h, nil),
		drpc("db-drpc", drv1alpha1.ActionRelocate, drv1alpha1.DRStateRelocating, 8*h, took(s)),
		drpc("db-drpc", drv1alpha1.ActionRelocate, drv1alpha1.DRStateInitiating, 8*h, took(s)),
		drpc("db-drpc", drv1alpha1.ActionFailover, drv1alpha1.DRStateRelocated, 8*h, took(s)),
		drpc("db-drpc", "", drv1alpha1.DRStateDeployed, 8*h, nil),
	} {
		if f = last(open); f.Name != "fr-gone" {
			t.Fatalf("DRPC %s/%s: last failover %+v, want fr-gone", open.Spec.Action, open.Status.Phase, f)
		}
	}

	// A FailoverRequest newer than every DRPC action wins again.
	newest := request("fr-2", "u2", "Pending", 10*h, "StoppingOnSource", 10*h+s, "Completed", 10*h+40*s)
	f = Build(Input{From: t0, To: at(24 * h), Now: at(24 * h), Groups: []srvGroup{pg},
		Requests: []srv1alpha1.FailoverRequest{live, newest}, DRPCs: []drv1alpha1.DRPlacementControl{relocated}}).Groups[0].LastFailover
	if f.Name != "fr-2" || f.FromHistory || f.RTOSeconds == nil || *f.RTOSeconds != 40 {
		t.Fatalf("last failover %+v, want fr-2 in 40s", f)
	}
}
