package monitor

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// EpisodeAction says what to do with the group's RPOEvent.
type EpisodeAction string

// Episode actions.
const (
	// EpisodeStart creates the RPOEvent of a new breach.
	EpisodeStart EpisodeAction = "Start"
	// EpisodeUpdate raises the open RPOEvent's peak or widens its affected VMs.
	EpisodeUpdate EpisodeAction = "Update"
	// EpisodeEnd resolves the open RPOEvent.
	EpisodeEnd EpisodeAction = "End"
)

// Episode is one transition of an RPO breach episode: the RPOEvent to create or
// the status to give it.
type Episode struct {
	Action EpisodeAction
	Name   string
	Spec   srv1alpha1.RPOEventSpec
	Status srv1alpha1.RPOEventStatus
}

// EventName is the RPOEvent of a group's breach that began at start. It is
// derived from the start so that a retried creation finds the same object.
func EventName(group string, start time.Time) string {
	name := fmt.Sprintf("%s-rpo-%s", group, start.UTC().Format("20060102-150405"))
	if len(name) > 253 {
		name = name[len(name)-253:]
	}
	return strings.TrimLeft(name, "-.")
}

// episode decides the RPO episode transition and keeps st.ActiveRPOEvent in step
// with it: one RPOEvent from the first evaluation above the objective to the
// first one back under it.
func episode(in Input, st *srv1alpha1.ReplicationGroupStatusStatus, lags []vmLag, now time.Time) *Episode {
	objective := int64(in.ObjectiveSeconds)
	breach := st.MaxLagSeconds > objective
	open := in.Event
	if open != nil && (st.ActiveRPOEvent == "" || open.Status.State == srv1alpha1.RPOEventResolved && !breach) {
		if st.ActiveRPOEvent != "" {
			// Resolved but the status still names it (a crash between the writes).
			st.ActiveRPOEvent = ""
		}
		return nil
	}
	affected, cause := breachers(lags, objective)
	switch {
	case breach && (open == nil || open.Status.State == srv1alpha1.RPOEventResolved):
		start := earliestBreach(lags, objective, now)
		ep := &Episode{Action: EpisodeStart, Name: EventName(in.Group.Name, start),
			Spec: srv1alpha1.RPOEventSpec{
				ProtectionGroupRef:  srv1alpha1.ProtectionGroupReference{Name: in.Group.Name, Namespace: in.Group.Namespace},
				RPOObjectiveSeconds: in.ObjectiveSeconds, StartTime: metav1.Time{Time: start},
			},
			Status: srv1alpha1.RPOEventStatus{State: srv1alpha1.RPOEventActive, PeakLagSeconds: st.MaxLagSeconds,
				PeakTime: &metav1.Time{Time: now}, AffectedVMs: affected,
				Message: fmt.Sprintf("replication lag %ds exceeds the objective of %ds%s", st.MaxLagSeconds, objective, cause)},
		}
		if open != nil && open.Name == ep.Name {
			// The same episode, found again after its event was resolved by hand.
			ep.Status = mergeStatus(open.Status, ep.Status)
		}
		st.ActiveRPOEvent = ep.Name
		return ep
	case breach:
		next := open.Status.DeepCopy()
		if st.MaxLagSeconds > next.PeakLagSeconds {
			next.PeakLagSeconds, next.PeakTime = st.MaxLagSeconds, &metav1.Time{Time: now}
		}
		next.AffectedVMs = union(next.AffectedVMs, affected)
		if equality.Semantic.DeepEqual(*next, open.Status) {
			return nil
		}
		return &Episode{Action: EpisodeUpdate, Name: open.Name, Spec: open.Spec, Status: *next}
	case st.ActiveRPOEvent != "":
		st.ActiveRPOEvent = ""
		if open == nil {
			return nil
		}
		next := open.Status.DeepCopy()
		next.State, next.EndTime = srv1alpha1.RPOEventResolved, &metav1.Time{Time: now}
		// The lag a volume had right before it was found in sync again is the
		// episode's last and usually highest value.
		for _, l := range lags {
			if l.regained > next.PeakLagSeconds {
				next.PeakLagSeconds, next.PeakTime = l.regained, &metav1.Time{Time: now}
			}
		}
		return &Episode{Action: EpisodeEnd, Name: open.Name, Spec: open.Spec, Status: *next}
	}
	return nil
}

// breachers are the VMs above the objective and a summary of why.
func breachers(lags []vmLag, objective int64) ([]string, string) {
	var vms, down []string
	for _, l := range lags {
		if l.lag <= objective {
			continue
		}
		vms = append(vms, l.vm)
		if l.conn != connConnected {
			down = append(down, l.vm+" ("+l.conn+")")
		}
	}
	sort.Strings(vms)
	cause := ""
	if len(down) > 0 {
		sort.Strings(down)
		cause = "; replication link down: " + strings.Join(down, ", ")
	}
	return vms, cause
}

// earliestBreach is when the first breaching volume's lag exceeded the objective.
func earliestBreach(lags []vmLag, objective int64, now time.Time) time.Time {
	start := now
	for _, l := range lags {
		if l.lag > objective && l.base != nil {
			if t := l.base.Add(time.Duration(objective) * time.Second); t.Before(start) {
				start = t
			}
		}
	}
	return start
}

func mergeStatus(old, cur srv1alpha1.RPOEventStatus) srv1alpha1.RPOEventStatus {
	cur.AffectedVMs = union(old.AffectedVMs, cur.AffectedVMs)
	if old.PeakLagSeconds > cur.PeakLagSeconds {
		cur.PeakLagSeconds, cur.PeakTime = old.PeakLagSeconds, old.PeakTime
	}
	return cur
}

func union(a, b []string) []string {
	set := make(map[string]struct{}, len(a)+len(b))
	for _, s := range append(append([]string(nil), a...), b...) {
		set[s] = struct{}{}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// statusChanged compares everything but lastUpdateTime.
func statusChanged(prev, cur *srv1alpha1.ReplicationGroupStatusStatus) bool {
	a, b := *prev, *cur
	a.LastUpdateTime, b.LastUpdateTime = nil, nil
	return !equality.Semantic.DeepEqual(a, b)
}
