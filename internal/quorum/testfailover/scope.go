package testfailover

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// scope is what one reconcile of a TestFailover works on.
type scope struct {
	tf     *srv1alpha1.TestFailover
	before *srv1alpha1.TestFailover
	now    time.Time

	group *srv1alpha1.ProtectionGroup
	zone  string
	// events to record once the status is written, so that a failed status write
	// does not leave an event claiming a transition that was not persisted.
	events []flow.Event
}

func (s *scope) key() remote.Key {
	return remote.Key{Namespace: s.tf.Namespace, Zone: s.zone, Cluster: s.tf.Spec.TargetCluster}
}

func (s *scope) namespace() string {
	if s.tf.Status.IsolatedNamespace != "" {
		return s.tf.Status.IsolatedNamespace
	}
	return isolatedNamespace(s.tf)
}

// enter moves the test to phase, records it in the audit trail and queues the
// one event of the transition.
func (s *scope) enter(phase srv1alpha1.TestFailoverPhase, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	st := &s.tf.Status
	st.Phase = phase
	st.PhaseHistory = append(st.PhaseHistory, srv1alpha1.PhaseTransition{
		Phase: string(phase), Time: metav1.NewMicroTime(s.now), Message: msg,
	})
	kind := corev1.EventTypeNormal
	if phase == srv1alpha1.TestFailoverFailed {
		kind = corev1.EventTypeWarning
	}
	s.events = append(s.events, flow.Event{Type: kind, Reason: string(phase), Message: msg})
	switch phase {
	case srv1alpha1.TestFailoverSucceeded:
		st.CompletionTime = &metav1.Time{Time: s.now}
		s.condition(srv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonPassed, msg)
	case srv1alpha1.TestFailoverFailed:
		st.CompletionTime = &metav1.Time{Time: s.now}
	default:
		s.condition(srv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonProgressing, msg)
	}
}

// reject ends a test that created nothing: bad input found in Pending.
func (s *scope) reject(reason, message string) {
	s.enter(srv1alpha1.TestFailoverFailed, "%s", message)
	s.condition(srv1alpha1.ConditionReady, metav1.ConditionFalse, reason, message)
	s.condition(ConditionCleanedUp, metav1.ConditionTrue, ReasonCleanedUp, "nothing was created")
}

// conclude records the verdict and starts the cleanup, which every test that
// got past Pending goes through.
func (s *scope) conclude(passed bool, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	status := metav1.ConditionFalse
	if passed {
		status = metav1.ConditionTrue
	}
	s.condition(ConditionVerified, status, reason, msg)
	s.condition(ConditionCleanedUp, metav1.ConditionFalse, ReasonCleaning, "deleting the test objects on "+s.tf.Spec.TargetCluster)
	s.enter(srv1alpha1.TestFailoverCleaningUp, "%s; cleaning up", msg)
}

// verdict is the recorded outcome of the checks, if any.
func (s *scope) verdict() *metav1.Condition {
	return meta.FindStatusCondition(s.tf.Status.Conditions, ConditionVerified)
}

// condition sets a condition; a changed message alone does not bump the time.
func (s *scope) condition(t string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.tf.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: s.tf.Generation,
	})
}

// waiting records why the current phase cannot proceed yet, without an event.
func (s *scope) waiting(format string, args ...any) {
	s.condition(srv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonProgressing, fmt.Sprintf(format, args...))
}

// enteredAt is when the test entered phase, from its audit trail.
func (s *scope) enteredAt(phase srv1alpha1.TestFailoverPhase) time.Time {
	h := s.tf.Status.PhaseHistory
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Phase == string(phase) {
			return h[i].Time.Time
		}
	}
	return s.now
}

// deadline is when the whole test times out.
func (s *scope) deadline() time.Time {
	start := s.now
	if s.tf.Status.StartTime != nil {
		start = s.tf.Status.StartTime.Time
	}
	return start.Add(time.Duration(s.tf.Spec.TimeoutSeconds) * time.Second)
}

func (s *scope) vmReadyTimeout() time.Duration {
	sec := s.tf.Spec.Checks.VMReadyTimeoutSeconds
	if sec <= 0 {
		sec = 300
	}
	return time.Duration(sec) * time.Second
}

// result returns the recorded verdict of one check of one VM.
func (s *scope) result(vm, check string) (srv1alpha1.CheckResult, bool) {
	for _, r := range s.tf.Status.Results {
		if r.VM == vm && r.Check == check {
			return r, true
		}
	}
	return srv1alpha1.CheckResult{}, false
}

// record adds a verdict; a verdict once recorded is final.
func (s *scope) record(vm, check string, passed bool, format string, args ...any) {
	if _, ok := s.result(vm, check); ok {
		return
	}
	s.tf.Status.Results = append(s.tf.Status.Results, srv1alpha1.CheckResult{
		VM: vm, Check: check, Passed: passed, Message: fmt.Sprintf(format, args...), Time: &metav1.Time{Time: s.now},
	})
}

func terminal(p srv1alpha1.TestFailoverPhase) bool {
	return p == srv1alpha1.TestFailoverSucceeded || p == srv1alpha1.TestFailoverFailed
}

// active phases have objects on the DR cluster and run under the timeout.
func active(p srv1alpha1.TestFailoverPhase) bool {
	switch p {
	case srv1alpha1.TestFailoverSnapshotting, srv1alpha1.TestFailoverRestoring,
		srv1alpha1.TestFailoverBooting, srv1alpha1.TestFailoverVerifying:
		return true
	}
	return false
}
