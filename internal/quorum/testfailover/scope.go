package testfailover

import (
	"fmt"
	"time"

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
	// trail is the test's audit trail: its phase, history, conditions, and the
	// events recorded once the status is written.
	trail *flow.Trail[srv1alpha1.TestFailoverPhase]
}

// phases are the terminal phases of a TestFailover.
var phases = flow.Terminals[srv1alpha1.TestFailoverPhase]{Succeeded: srv1alpha1.TestFailoverSucceeded, Failed: srv1alpha1.TestFailoverFailed}

func newScope(tf *srv1alpha1.TestFailover, now time.Time) *scope {
	st := &tf.Status
	return &scope{tf: tf, before: tf.DeepCopy(), now: now, trail: &flow.Trail[srv1alpha1.TestFailoverPhase]{
		Phase: &st.Phase, History: &st.PhaseHistory, Conditions: &st.Conditions,
		CompletionTime: &st.CompletionTime, Generation: tf.Generation, Now: now, Terminals: phases,
	}}
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

// reject ends a test that created nothing: bad input found in Pending.
func (s *scope) reject(reason, message string) {
	s.trail.Fail(reason, "%s", message)
	s.trail.Condition(ConditionCleanedUp, metav1.ConditionTrue, ReasonCleanedUp, "nothing was created")
}

// conclude records the verdict and starts the cleanup, which every test that
// got past Pending goes through.
func (s *scope) conclude(passed bool, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	status := metav1.ConditionFalse
	if passed {
		status = metav1.ConditionTrue
	}
	s.trail.Condition(ConditionVerified, status, reason, msg)
	s.trail.Condition(ConditionCleanedUp, metav1.ConditionFalse, ReasonCleaning, "deleting the test objects on "+s.tf.Spec.TargetCluster)
	s.trail.Enter(srv1alpha1.TestFailoverCleaningUp, "%s; cleaning up", msg)
}

// verdict is the recorded outcome of the checks, if any.
func (s *scope) verdict() *metav1.Condition {
	return meta.FindStatusCondition(s.tf.Status.Conditions, ConditionVerified)
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

// recorded reports whether one check of one VM has its verdict.
func (s *scope) recorded(vm, check string) bool {
	for _, r := range s.tf.Status.Results {
		if r.VM == vm && r.Check == check {
			return true
		}
	}
	return false
}

// record adds a verdict; a verdict once recorded is final.
func (s *scope) record(vm, check string, passed bool, format string, args ...any) {
	if s.recorded(vm, check) {
		return
	}
	s.tf.Status.Results = append(s.tf.Status.Results, srv1alpha1.CheckResult{
		VM: vm, Check: check, Passed: passed, Message: fmt.Sprintf(format, args...), Time: &metav1.Time{Time: s.now},
	})
}

func terminal(p srv1alpha1.TestFailoverPhase) bool { return phases.IsTerminal(p) }

// active phases have objects on the DR cluster and run under the timeout.
func active(p srv1alpha1.TestFailoverPhase) bool {
	switch p {
	case srv1alpha1.TestFailoverSnapshotting, srv1alpha1.TestFailoverRestoring,
		srv1alpha1.TestFailoverBooting, srv1alpha1.TestFailoverVerifying:
		return true
	}
	return false
}
