package drpc

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// setCondition sets a condition; a changed message alone does not bump the time.
func (s *scope) setCondition(t string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.drpc.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: s.drpc.Generation,
	})
}

// setPhase moves the DRPC to a phase and records the transition as an event.
// The request kinds keep their audit trail with flow.Trail; a DRPC has none to
// keep: its status is Ramen's (a phase and a progression, no phase history), so
// only the event of the transition is recorded, written by flow.WriteStatus
// once the status showing it is.
func (s *scope) setPhase(p drv1alpha1.DRState, format string, args ...any) {
	if s.drpc.Status.Phase == p {
		return
	}
	s.drpc.Status.Phase = p
	s.events = append(s.events, flow.Event{Type: corev1.EventTypeNormal, Reason: string(p), Message: fmt.Sprintf(format, args...)})
}

func (s *scope) setProgression(p drv1alpha1.ProgressionStatus) { s.drpc.Status.Progression = p }

// settledPhase reports whether the DRPC rests after a deploy or an action.
func settledPhase(p drv1alpha1.DRState) bool {
	return p == drv1alpha1.DRStateDeployed || p == drv1alpha1.DRStateFailedOver || p == drv1alpha1.DRStateRelocated
}

// setConditions computes Available, PeerReady and Protected from the scope
// after the phases ran; err is what stopped them, if anything.
func (r *Reconciler) setConditions(s *scope, err error) {
	if err != nil && (s.current() == "" || s.policy == nil || s.group == nil || s.remotes == nil) {
		// Nothing is placed yet and something stops the deploy: say what.
		reason := flow.ReasonOf(err, drv1alpha1.ReasonError)
		msg := "DRPC cannot be processed"
		if err != nil {
			msg = err.Error()
		}
		s.setCondition(drv1alpha1.ConditionAvailable, metav1.ConditionFalse, reason, msg)
		return
	}
	cur, unreachable := s.current(), s.unreachableNote()
	switch {
	case cur != "" && settledPhase(s.drpc.Status.Phase):
		s.setCondition(drv1alpha1.ConditionAvailable, metav1.ConditionTrue, string(s.drpc.Status.Phase), "application is placed on "+cur+unreachable)
	case cur != "" && s.drpc.Status.Phase == drv1alpha1.DRStateInitiating:
		s.setCondition(drv1alpha1.ConditionAvailable, metav1.ConditionTrue, string(s.drpc.Status.Phase), "application keeps running on "+cur+" until the action starts"+unreachable)
	default:
		msg := fmt.Sprintf("%s: %s", s.drpc.Status.Phase, s.drpc.Status.Progression)
		if s.waiting != "" {
			msg += ": waiting for " + s.waiting
		}
		s.setCondition(drv1alpha1.ConditionAvailable, metav1.ConditionFalse, drv1alpha1.ReasonProgressing, msg+unreachable)
	}
	s.setPeerReady()
	s.setProtected()
	s.setReady(err)
}

// setReady sets Ready from Available in a settled phase: the application is
// placed and no action is under way (Available is True already while an
// action initiates), which is what a `kubectl wait --for=condition=Ready`
// after a Failover or Relocate waits for. PeerReady and Protected stay apart:
// a DRPC failed over from a lost site is Ready while its peer is down. A spec
// that cannot be processed (a Stalled error) is Stalled; anything else that is
// not Ready yet is Reconciling.
func (s *scope) setReady(err error) {
	conds := &s.drpc.Status.Conditions
	if !settledPhase(s.drpc.Status.Phase) && meta.IsStatusConditionTrue(*conds, drv1alpha1.ConditionAvailable) {
		flow.SetReady(conds, s.drpc.Generation, metav1.ConditionFalse, drv1alpha1.ReasonProgressing,
			fmt.Sprintf("%s: %s", s.drpc.Status.Phase, s.drpc.Status.Progression), false)
		return
	}
	flow.ReadyFrom(conds, s.drpc.Generation, drv1alpha1.ConditionAvailable, err)
}

// unreachableNote names, for the Available message, each cluster that could
// not be read and why: a DRPC that waits for a cluster, or goes on without
// it, says which one.
func (s *scope) unreachableNote() string {
	var b strings.Builder
	for _, c := range slices.Sorted(maps.Keys(s.unreachable)) {
		err := s.unreachable[c]
		if errors.Is(err, remote.ErrUnreachable) {
			fmt.Fprintf(&b, "; %v", err) // it names the cluster
		} else {
			fmt.Fprintf(&b, "; cluster %s cannot be read: %v", c, err)
		}
	}
	return b.String()
}

// setPeerReady is True when the cluster other than the current one holds a
// secondary VRG and no action is in flight.
func (s *scope) setPeerReady() {
	cur := s.current()
	if cur == "" || s.inAction() {
		s.setCondition(drv1alpha1.ConditionPeerReady, metav1.ConditionFalse, drv1alpha1.ReasonProgressing, "an action is in progress")
		return
	}
	peer := s.other(cur)
	if err, down := s.unreachable[peer]; down {
		s.setCondition(drv1alpha1.ConditionPeerReady, metav1.ConditionFalse, srv1alpha1.ReasonClusterUnreachable, err.Error())
		return
	}
	if !vrgReached(s.vrgs[peer], drv1alpha1.SecondaryState) {
		msg := fmt.Sprintf("VRG on %s is not secondary yet (%s)", peer, vrgState(s.vrgs[peer]))
		if s.waiting != "" {
			msg += ": waiting for " + s.waiting
		}
		s.setCondition(drv1alpha1.ConditionPeerReady, metav1.ConditionFalse, drv1alpha1.ReasonProgressing, msg)
		return
	}
	s.setCondition(drv1alpha1.ConditionPeerReady, metav1.ConditionTrue, drv1alpha1.ReasonReady, "VRG on "+peer+" is secondary")
}

// setProtected is True when the primary VRG reports its data ready and
// protected and, unless the policy's schedulingInterval is 0m, a
// lastGroupSyncTime, which it copies into the status.
func (s *scope) setProtected() {
	cur := s.current()
	v := s.vrgs[cur]
	if cur == "" || s.inAction() || v == nil || !vrgReached(v, drv1alpha1.PrimaryState) {
		if _, down := s.unreachable[cur]; down {
			// Keep the last known protection state while the primary is unreachable.
			return
		}
		s.setCondition(drv1alpha1.ConditionProtected, metav1.ConditionFalse, drv1alpha1.ReasonProgressing,
			fmt.Sprintf("VRG on %q is not primary and ready yet (%s)", cur, vrgState(v)))
		return
	}
	if !meta.IsStatusConditionTrue(v.Status.Conditions, drv1alpha1.ConditionDataProtected) {
		s.setCondition(drv1alpha1.ConditionProtected, metav1.ConditionFalse, drv1alpha1.ReasonProgressing, "VRG on "+cur+" does not report DataProtected")
		return
	}
	interval, _ := parseInterval(s.policy.Spec.SchedulingInterval)
	if interval != 0 {
		t := v.Status.LastGroupSyncTime
		if t == nil || t.IsZero() {
			s.setCondition(drv1alpha1.ConditionProtected, metav1.ConditionFalse, drv1alpha1.ReasonProgressing, "VRG on "+cur+" reports no lastGroupSyncTime yet")
			return
		}
		s.drpc.Status.LastGroupSyncTime = t.DeepCopy()
	}
	s.setCondition(drv1alpha1.ConditionProtected, metav1.ConditionTrue, drv1alpha1.ReasonDataProtected, "VRG on "+cur+" protects the application's data")
}
