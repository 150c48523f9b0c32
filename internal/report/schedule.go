package report

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// DrillSchedule is a group's drill schedule (spec.drill) and where its drills
// stand (status.drill): the drill view of `kubectl siterecovery status` (its
// table and groups[].drill in JSON and YAML) and of the console's group page.
type DrillSchedule struct {
	// Schedule is five cron fields, in UTC.
	Schedule      string `json:"schedule"`
	Suspended     bool   `json:"suspended,omitempty"`
	TargetCluster string `json:"targetCluster"`
	// Keep is how many finished drills are kept.
	Keep int32 `json:"keep,omitempty"`
	// Next is when the next drill is due; empty while suspended.
	Next *metav1.Time `json:"nextScheduleTime,omitempty"`
	// LastStarted is the schedule slot of the last drill started.
	LastStarted *metav1.Time `json:"lastScheduleTime,omitempty"`
	LastDrill   string       `json:"lastDrill,omitempty"`
	LastResult  string       `json:"lastResult,omitempty"`
	// LastPassed is when the last drill that passed every check ended.
	LastPassed *metav1.Time `json:"lastSuccessfulTime,omitempty"`
	// Active is the drill in progress.
	Active  string `json:"active,omitempty"`
	Message string `json:"message,omitempty"`
}

// DrillScheduleOf reads the group's drill; nil when it has no schedule.
func DrillScheduleOf(pg *srv1alpha1.ProtectionGroup) *DrillSchedule {
	d := pg.Spec.Drill
	if d == nil {
		return nil
	}
	out := &DrillSchedule{Schedule: d.Schedule, Suspended: d.Suspend, TargetCluster: d.Template.TargetCluster, Keep: d.Keep}
	if st := pg.Status.Drill; st != nil {
		out.Next, out.LastStarted, out.LastPassed = st.NextScheduleTime, st.LastScheduleTime, st.LastSuccessfulTime
		out.LastDrill, out.LastResult, out.Active, out.Message = st.LastDrill, string(st.LastResult), st.Active, st.Message
	}
	return out
}
