package report

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// DefaultRPOObjectiveSeconds is the objective of a group that sets none, as
// the replication-monitor applies it.
const DefaultRPOObjectiveSeconds = 300

// Input is what one report is computed from: the objects of one DR namespace.
type Input struct {
	Namespace     string
	Groups        []srv1alpha1.ProtectionGroup
	Events        []srv1alpha1.RPOEvent
	TestFailovers []srv1alpha1.TestFailover
	Requests      []srv1alpha1.FailoverRequest
	// DRPCs are the namespace's DRPlacementControls, whose finished actions
	// are failovers too; nil when the reader may not list them (its note
	// says so).
	DRPCs []drv1alpha1.DRPlacementControl
	// Notes say what the reader could not read, so the report leaves out.
	Notes []string
	// From and To bound the window [From, To); time after Now is not
	// measured yet.
	From, To, Now time.Time
}

// Report is the compliance report of one DR namespace. Its JSON field names
// are an interface: the CLI prints them and the console serves them.
type Report struct {
	Namespace string      `json:"namespace"`
	From      metav1.Time `json:"from"`
	To        metav1.Time `json:"to"`
	Groups    []Group     `json:"groups"`
	// Notes say what the reader may not read, and so the figures leave out.
	Notes []string `json:"notes,omitempty"`
}

// Group is one ProtectionGroup's part of the report.
type Group struct {
	Name string `json:"name"`
	RPO  RPO    `json:"rpo"`
	// LastDrill is the group's newest TestFailover, finished or not.
	LastDrill *Drill `json:"lastDrill,omitempty"`
	// LastSuccessfulDrillTime is when the newest drill that passed every
	// check ended: from the TestFailovers still kept, or the drill status the
	// schedule keeps after it pruned them.
	LastSuccessfulDrillTime *metav1.Time `json:"lastSuccessfulDrillTime,omitempty"`
	// LastFailover is the group's newest finished FailoverRequest (or the
	// group's history record of it once the request was deleted) or
	// DRPlacementControl action, whichever finished last.
	LastFailover *Failover `json:"lastFailover,omitempty"`
}

// Build computes the report. Groups are in name order.
func Build(in Input) Report {
	r := Report{Namespace: in.Namespace, From: metav1.NewTime(in.From), To: metav1.NewTime(in.To), Groups: []Group{}, Notes: in.Notes}
	groups := append([]srv1alpha1.ProtectionGroup(nil), in.Groups...)
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	for i := range groups {
		pg := &groups[i]
		g := Group{Name: pg.Name, RPO: rpoOf(pg, in)}
		g.LastDrill, g.LastSuccessfulDrillTime = drillsOf(pg, in.TestFailovers)
		g.LastFailover = lastFailover(pg, in.Requests, in.DRPCs)
		r.Groups = append(r.Groups, g)
	}
	return r
}

// seconds is d in seconds, to the millisecond.
func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

func later(a, b *metav1.Time) *metav1.Time {
	if a == nil || (b != nil && b.After(a.Time)) {
		return b
	}
	return a
}
