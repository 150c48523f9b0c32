package report

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// t0 is the start of the window the tests use.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func mt(d time.Duration) *metav1.Time { return &metav1.Time{Time: at(d)} }

func group(name string, created time.Duration) srv1alpha1.ProtectionGroup {
	pg := srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dr", CreationTimestamp: metav1.NewTime(at(created))}}
	pg.Spec.Replication.RPOObjectiveSeconds = 300
	return pg
}

// resolved is an episode from start to end with its peak lag.
func resolved(name, pg string, start, end time.Duration, peak int64) srv1alpha1.RPOEvent {
	ev := active(name, pg, start, peak)
	ev.Status.State, ev.Status.EndTime = srv1alpha1.RPOEventResolved, mt(end)
	return ev
}

func active(name, pg string, start time.Duration, peak int64) srv1alpha1.RPOEvent {
	return srv1alpha1.RPOEvent{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dr"},
		Spec: srv1alpha1.RPOEventSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: pg},
			RPOObjectiveSeconds: 300, StartTime: metav1.NewTime(at(start))},
		Status: srv1alpha1.RPOEventStatus{State: srv1alpha1.RPOEventActive, PeakLagSeconds: peak},
	}
}

func drill(name, pg string, scheduled bool, phase srv1alpha1.TestFailoverPhase, start time.Duration) srv1alpha1.TestFailover {
	tf := srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dr", CreationTimestamp: metav1.NewTime(at(start - time.Second))},
		Spec:   srv1alpha1.TestFailoverSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: pg}, TargetCluster: "dr-cluster"},
		Status: srv1alpha1.TestFailoverStatus{Phase: phase, StartTime: mt(start)}}
	if scheduled {
		tf.Labels = map[string]string{srv1alpha1.DrillLabel: pg}
		tf.Annotations = map[string]string{srv1alpha1.DrillScheduledTimeAnnotation: at(start).UTC().Format(time.RFC3339)}
	}
	return tf
}

// result is a verdict on db-vm, the tests' one VM.
func result(check string, passed bool, t time.Duration) srv1alpha1.CheckResult {
	return srv1alpha1.CheckResult{VM: "db-vm", Check: check, Passed: passed, Time: mt(t), Message: check + " on db-vm"}
}

// request is a FailoverRequest of group db that went through phases, each
// entered at its offset.
func request(name, uid string, phases ...any) srv1alpha1.FailoverRequest {
	fr := srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dr", UID: types.UID(uid)},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "db"},
			TargetCluster: "dr-cluster", FailoverType: srv1alpha1.FailoverPlanned}}
	fr.Status.PhaseHistory = transitions(phases...)
	if n := len(fr.Status.PhaseHistory); n > 0 {
		last := fr.Status.PhaseHistory[n-1]
		fr.Status.Phase = srv1alpha1.FailoverPhase(last.Phase)
		fr.CreationTimestamp = metav1.NewTime(fr.Status.PhaseHistory[0].Time.Time)
		if last.Phase == string(srv1alpha1.FailoverCompleted) || last.Phase == string(srv1alpha1.FailoverFailed) {
			fr.Status.CompletionTime = &metav1.Time{Time: last.Time.Time}
		}
	}
	return fr
}

// transitions takes pairs of phase name and offset.
func transitions(phases ...any) []srv1alpha1.PhaseTransition {
	var h []srv1alpha1.PhaseTransition
	for i := 0; i+1 < len(phases); i += 2 {
		h = append(h, srv1alpha1.PhaseTransition{Phase: phases[i].(string), Time: metav1.NewMicroTime(at(phases[i+1].(time.Duration)))})
	}
	return h
}

func groupOf(t interface{ Fatalf(string, ...any) }, r Report, name string) Group {
	for _, g := range r.Groups {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no group %s in the report", name)
	return Group{}
}

type (
	srvGroup = srv1alpha1.ProtectionGroup
	srvEvent = srv1alpha1.RPOEvent
)
