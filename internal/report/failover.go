package report

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

const kindFailoverRequest = "FailoverRequest"

// Failover is the group's newest finished failover (or failback): a
// FailoverRequest or a DRPlacementControl's Failover or Relocate.
type Failover struct {
	Name string `json:"name"`
	// Kind is what Name names: FailoverRequest or DRPlacementControl.
	Kind          string `json:"kind,omitempty"`
	Type          string `json:"type,omitempty"`
	SourceCluster string `json:"sourceCluster,omitempty"`
	TargetCluster string `json:"targetCluster"`
	// Outcome is Completed or Failed.
	Outcome        string       `json:"outcome"`
	StartTime      *metav1.Time `json:"startTime,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// RTOSeconds is the time from the request's first phase to Completed,
	// as `failover --wait` counts it, or a DRPC's actionDuration; absent for
	// a Failed request.
	RTOSeconds *float64 `json:"rtoSeconds,omitempty"`
	// Phases is how long each phase lasted, in order.
	Phases []PhaseDuration `json:"phases,omitempty"`
	// FromHistory is true when the request was deleted and the figures come
	// from the group's status.history.
	FromHistory bool `json:"fromHistory,omitempty"`
}

// PhaseDuration is how long one phase lasted.
type PhaseDuration struct {
	Phase   string  `json:"phase"`
	Seconds float64 `json:"seconds"`
}

// lastFailover is the newest finished move of the group: a live
// FailoverRequest, else its record in status.history, or a DRPC's action.
func lastFailover(pg *srv1alpha1.ProtectionGroup, frs []srv1alpha1.FailoverRequest, drpcs []drv1alpha1.DRPlacementControl) *Failover {
	best := fromDRPCs(pg, drpcs)
	live := map[string]bool{}
	for i := range frs {
		fr := &frs[i]
		if fr.Spec.ProtectionGroupRef.Name != pg.Name {
			continue
		}
		live[string(fr.UID)] = true
		if fr.Status.Phase != srv1alpha1.FailoverCompleted && fr.Status.Phase != srv1alpha1.FailoverFailed {
			continue
		}
		best = newer(best, fromRequest(fr))
	}
	for i := range pg.Status.History {
		rec := &pg.Status.History[i]
		if rec.Kind != kindFailoverRequest || (rec.UID != "" && live[rec.UID]) {
			continue
		}
		best = newer(best, fromRecord(rec))
	}
	return best
}

func fromRequest(fr *srv1alpha1.FailoverRequest) *Failover {
	f := &Failover{Name: fr.Name, Kind: kindFailoverRequest, Type: string(fr.Spec.FailoverType), SourceCluster: fr.Status.SourceCluster,
		TargetCluster: fr.Spec.TargetCluster, Outcome: string(fr.Status.Phase), CompletionTime: fr.Status.CompletionTime.DeepCopy()}
	start := fr.CreationTimestamp.Time
	if h := fr.Status.PhaseHistory; len(h) > 0 {
		start = h[0].Time.Time
	}
	f.StartTime = &metav1.Time{Time: start}
	timed(f, fr.Status.PhaseHistory, start)
	return f
}

func fromRecord(rec *srv1alpha1.RequestRecord) *Failover {
	f := &Failover{Name: rec.Name, Kind: kindFailoverRequest, Type: rec.Type, SourceCluster: rec.SourceCluster, TargetCluster: rec.TargetCluster,
		Outcome: rec.Outcome, StartTime: rec.StartTime.DeepCopy(), CompletionTime: rec.CompletionTime.DeepCopy(), FromHistory: true}
	var start time.Time
	if len(rec.Phases) > 0 {
		start = rec.Phases[0].Time.Time
	} else if rec.StartTime != nil {
		start = rec.StartTime.Time
	}
	if !start.IsZero() {
		f.StartTime = &metav1.Time{Time: start}
	}
	timed(f, rec.Phases, start)
	return f
}

// timed fills the phase durations and, for a Completed request, the RTO:
// from start to the entry into Completed.
func timed(f *Failover, h []srv1alpha1.PhaseTransition, start time.Time) {
	for i := 0; i+1 < len(h); i++ {
		f.Phases = append(f.Phases, PhaseDuration{Phase: h[i].Phase, Seconds: seconds(h[i+1].Time.Sub(h[i].Time.Time))})
	}
	if f.Outcome != string(srv1alpha1.FailoverCompleted) {
		return
	}
	for _, t := range h {
		if t.Phase == string(srv1alpha1.FailoverCompleted) {
			rto := seconds(t.Time.Sub(start))
			f.RTOSeconds = &rto
			return
		}
	}
	if f.CompletionTime != nil && !start.IsZero() {
		rto := seconds(f.CompletionTime.Sub(start))
		f.RTOSeconds = &rto
	}
}

// newer is whichever of a and b finished later.
func newer(a, b *Failover) *Failover {
	if a == nil {
		return b
	}
	if endOf(b).After(endOf(a)) {
		return b
	}
	return a
}

func endOf(f *Failover) time.Time {
	if f.CompletionTime != nil {
		return f.CompletionTime.Time
	}
	if f.StartTime != nil {
		return f.StartTime.Time
	}
	return time.Time{}
}
