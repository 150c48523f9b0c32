package report

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Drill is one TestFailover of the group.
type Drill struct {
	Name string `json:"name"`
	// Scheduled is true for a drill the group's schedule created
	// (srv1alpha1.DrillLabel and the slot it ran for), false for a drill
	// started by hand or any other test failover.
	Scheduled      bool         `json:"scheduled"`
	Phase          string       `json:"phase"`
	TargetCluster  string       `json:"targetCluster"`
	StartTime      *metav1.Time `json:"startTime,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Passed is true once the drill Succeeded: every check passed.
	Passed bool    `json:"passed"`
	Checks []Check `json:"checks"`
	// RTOSeconds is the time from the drill's start to its last check
	// passing: how long its VMs took to come up and answer. Absent while a
	// check is pending or when one failed (Note says which).
	RTOSeconds *float64 `json:"rtoSeconds,omitempty"`
	Note       string   `json:"note,omitempty"`
}

// Check is one check's verdict on one VM.
type Check struct {
	VM      string `json:"vm"`
	Check   string `json:"check"`
	Passed  bool   `json:"passed"`
	Message string `json:"message,omitempty"`
}

// drillsOf is the group's newest TestFailover and when its newest successful
// drill ended.
func drillsOf(pg *srv1alpha1.ProtectionGroup, tfs []srv1alpha1.TestFailover) (*Drill, *metav1.Time) {
	var last *srv1alpha1.TestFailover
	var success *metav1.Time
	if pg.Status.Drill != nil {
		success = pg.Status.Drill.LastSuccessfulTime.DeepCopy()
	}
	for i := range tfs {
		tf := &tfs[i]
		if tf.Spec.ProtectionGroupRef.Name != pg.Name {
			continue
		}
		if last == nil || startOf(tf).After(startOf(last)) {
			last = tf
		}
		if tf.Status.Phase == srv1alpha1.TestFailoverSucceeded {
			end := tf.Status.CompletionTime
			if end == nil {
				end = &metav1.Time{Time: enteredLast(tf.Status.PhaseHistory)}
			}
			success = later(success, end.DeepCopy())
		}
	}
	if last == nil {
		return nil, success
	}
	return drillOf(pg.Name, last), success
}

// scheduled reports whether the group's schedule created tf: the drill
// controller labels its drills and names the slot each ran for. A drill
// started by hand (kubectl siterecovery drill) carries the label, so that
// retention counts it, but no slot.
func scheduled(group string, tf *srv1alpha1.TestFailover) bool {
	_, slot := tf.Annotations[srv1alpha1.DrillScheduledTimeAnnotation]
	return tf.Labels[srv1alpha1.DrillLabel] == group && slot
}

func drillOf(group string, tf *srv1alpha1.TestFailover) *Drill {
	d := &Drill{Name: tf.Name, Scheduled: scheduled(group, tf), Phase: string(tf.Status.Phase),
		TargetCluster: tf.Spec.TargetCluster, StartTime: tf.Status.StartTime.DeepCopy(),
		CompletionTime: tf.Status.CompletionTime.DeepCopy(), Passed: tf.Status.Phase == srv1alpha1.TestFailoverSucceeded,
		Checks: []Check{}}
	if d.Phase == "" {
		d.Phase = string(srv1alpha1.TestFailoverPending)
	}
	var lastPass time.Time
	failed := 0
	for _, r := range tf.Status.Results {
		d.Checks = append(d.Checks, Check{VM: r.VM, Check: r.Check, Passed: r.Passed, Message: r.Message})
		if !r.Passed {
			failed++
		} else if r.Time != nil && r.Time.After(lastPass) {
			lastPass = r.Time.Time
		}
	}
	switch {
	case failed > 0:
		d.Note = "no RTO: a check failed"
	case tf.Status.StartTime == nil:
		d.Note = "no RTO: the drill has not started"
	case len(tf.Status.Results) == 0 || lastPass.IsZero():
		d.Note = "no RTO: no check has passed yet"
	case !d.Passed && tf.Status.Phase != srv1alpha1.TestFailoverCleaningUp:
		d.Note = "no RTO yet: checks are still running"
	default:
		rto := seconds(lastPass.Sub(tf.Status.StartTime.Time))
		d.RTOSeconds = &rto
	}
	return d
}

// startOf orders drills: their start, else their creation.
func startOf(tf *srv1alpha1.TestFailover) time.Time {
	if tf.Status.StartTime != nil {
		return tf.Status.StartTime.Time
	}
	return tf.CreationTimestamp.Time
}

func enteredLast(h []srv1alpha1.PhaseTransition) time.Time {
	if len(h) == 0 {
		return time.Time{}
	}
	return h[len(h)-1].Time.Time
}
