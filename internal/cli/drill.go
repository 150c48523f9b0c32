package cli

import (
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// DrillState is a group's drill schedule and where its drills stand
// (spec.drill and status.drill of the quorum copy).
type DrillState struct {
	// Schedule is five cron fields, in UTC.
	Schedule      string `json:"schedule"`
	Suspended     bool   `json:"suspended,omitempty"`
	TargetCluster string `json:"targetCluster"`
	// Next is when the next drill is due; empty while suspended.
	Next *metav1.Time `json:"nextScheduleTime,omitempty"`
	// LastStarted is the schedule slot of the last drill started.
	LastStarted *metav1.Time `json:"lastScheduleTime,omitempty"`
	LastDrill   string       `json:"lastDrill,omitempty"`
	LastResult  string       `json:"lastResult,omitempty"`
	// LastPassed is when the last drill that passed every check ended.
	LastPassed *metav1.Time `json:"lastSuccessfulTime,omitempty"`
	Active     string       `json:"active,omitempty"`
	Message    string       `json:"message,omitempty"`
}

// drillState reads the group's drill; nil when it has no schedule.
func drillState(pg *srv1alpha1.ProtectionGroup) *DrillState {
	d := pg.Spec.Drill
	if d == nil {
		return nil
	}
	out := &DrillState{Schedule: d.Schedule, Suspended: d.Suspend, TargetCluster: d.Template.TargetCluster}
	if st := pg.Status.Drill; st != nil {
		out.Next, out.LastStarted, out.LastPassed = st.NextScheduleTime, st.LastScheduleTime, st.LastSuccessfulTime
		out.LastDrill, out.LastResult, out.Active, out.Message = st.LastDrill, string(st.LastResult), st.Active, st.Message
	}
	return out
}

// drillTable prints the drills of the groups that have a schedule, then each
// drill's message (why one was skipped, how the last one ended). row and
// cols are statusTables', which add the NAMESPACE column under -A.
func drillTable(w io.Writer, nss []NamespaceStatus, opts printers.PrintOptions, all bool, cols func(...string) []string, row func(*table, string, ...string)) error {
	var messages []string
	t := newTable(w, cols("GROUP", "DRILL SCHEDULE (UTC)", "TARGET", "NEXT", "LAST DRILL", "RESULT", "LAST PASSED", "ACTIVE")...).with(opts)
	for _, n := range nss {
		for _, g := range n.Groups {
			d := g.Drill
			if d == nil {
				continue
			}
			next := stamp(d.Next)
			if d.Suspended {
				next = "suspended"
			}
			row(t, n.Namespace, g.Name, d.Schedule, d.TargetCluster, next, d.LastDrill, d.LastResult, stamp(d.LastPassed), d.Active)
			if d.Message != "" {
				messages = append(messages, fmt.Sprintf("  %s%s drill: %s", nsPrefix(all, n.Namespace), g.Name, d.Message))
			}
		}
	}
	if len(t.t.Rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	if err := t.flush(); err != nil {
		return err
	}
	for _, m := range messages {
		fmt.Fprintln(w, m)
	}
	return nil
}
