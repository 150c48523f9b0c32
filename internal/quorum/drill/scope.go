package drill

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// scope is one reconcile of a group: the status.drill it computes and the
// events to record once it is written.
type scope struct {
	group  *srv1alpha1.ProtectionGroup
	now    time.Time
	status *srv1alpha1.DrillStatus
	events []flow.Event
}

func (s *scope) event(kind, reason, format string, args ...any) {
	s.events = append(s.events, flow.Event{Type: kind, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func (s *scope) normal(reason, format string, args ...any) {
	s.event(corev1.EventTypeNormal, reason, format, args...)
}

func (s *scope) warning(reason, format string, args ...any) {
	s.event(corev1.EventTypeWarning, reason, format, args...)
}

// due is the slot the group waits for, which it records in
// nextScheduleTime. A new spec generation keeps the pending slot when the
// schedule still has it and no earlier one after now (a change of another
// field keeps a slot missed during downtime); otherwise the first slot after
// now.
func (s *scope) due(sched cron.Schedule) time.Time {
	st := s.status
	if st.NextScheduleTime != nil && (st.ObservedGeneration == s.group.Generation ||
		(isSlot(sched, st.NextScheduleTime.Time) && !sched.Next(s.now).Before(st.NextScheduleTime.Time))) {
		st.ObservedGeneration = s.group.Generation
		return st.NextScheduleTime.Time
	}
	next := sched.Next(s.now)
	st.NextScheduleTime = metaTime(next)
	st.ObservedGeneration = s.group.Generation
	return next
}

func metaTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &metav1.Time{Time: t.UTC()}
}

// Messages about the spec, which a spec that is fine again clears.
const (
	msgSuspended       = "drills are suspended (spec.drill.suspend)"
	msgScheduleInvalid = "; fix spec.drill.schedule"
)

func specMessage(m string) bool {
	return m == msgSuspended || strings.HasSuffix(m, msgScheduleInvalid)
}
