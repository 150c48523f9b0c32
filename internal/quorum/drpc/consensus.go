package drpc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// pendingPeers returns, as sorted "namespace/name", the peers that do not ask
// for the same action and target as self: failoverCluster for a
// Failover, preferredCluster for a Relocate. Peers being deleted are leaving
// the group and do not count.
func pendingPeers(self *drv1alpha1.DRPlacementControl, peers []drv1alpha1.DRPlacementControl) []string {
	want := actionTarget(self)
	var pending []string
	for i := range peers {
		p := &peers[i]
		if (self.UID != "" && p.UID == self.UID) || (p.Namespace == self.Namespace && p.Name == self.Name) || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if p.Spec.Action != self.Spec.Action || actionTarget(p) != want {
			pending = append(pending, p.Namespace+"/"+p.Name)
		}
	}
	slices.Sort(pending)
	return pending
}

// actionTarget is the target cluster of a DRPC's action.
func actionTarget(d *drv1alpha1.DRPlacementControl) string {
	if d.Spec.Action == drv1alpha1.ActionFailover {
		return d.Spec.FailoverCluster
	}
	return d.Spec.PreferredCluster
}

// gate is the action consensus gate (every DRPC of a global group asks for the same action and target), run after the DRPC is Initiating
// and before the switch. It reports whether the action may proceed; a DRPC
// without a global-vgr label always may.
func (r *Reconciler) gate(ctx context.Context, s *scope) (bool, error) {
	label := s.globalVGR()
	if label == "" {
		return true, nil
	}
	peers := &drv1alpha1.DRPlacementControlList{} // read only: the cache's own objects, not copies
	if err := r.Client.List(ctx, peers, client.InNamespace(s.drpc.Namespace), client.MatchingFields{globalVGRIndex: label}, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	action := string(s.drpc.Spec.Action)
	if pending := pendingPeers(s.drpc, peers.Items); len(pending) > 0 {
		s.setProgression(drv1alpha1.ProgressionWaitOnGlobalAction)
		s.setGlobalAction(metav1.ConditionFalse, drv1alpha1.ReasonConsensusNotReached,
			fmt.Sprintf(drv1alpha1.MessageExpectedActionFmt, action, actionTarget(s.drpc), strings.Join(pending, ", ")))
		return false, nil
	}
	s.setGlobalAction(metav1.ConditionTrue, drv1alpha1.ReasonConsensusReached,
		fmt.Sprintf(drv1alpha1.MessageConsensusActionFmt, action))
	return true, nil
}

// setGlobalAction sets the GlobalAction condition and records an event when its
// status changes.
func (s *scope) setGlobalAction(status metav1.ConditionStatus, reason, message string) {
	was := meta.FindStatusCondition(s.drpc.Status.Conditions, drv1alpha1.ConditionGlobalAction)
	s.setCondition(drv1alpha1.ConditionGlobalAction, status, reason, message)
	if was != nil && was.Status == status {
		return
	}
	kind := corev1.EventTypeNormal
	if status != metav1.ConditionTrue {
		kind = corev1.EventTypeWarning
	}
	s.events = append(s.events, flow.Event{Type: kind, Reason: reason, Message: message})
}

// consensusValue is the value of ramen_global_action_consensus_status for the
// DRPC, and whether it has one: only labelled DRPCs that evaluated the gate.
func consensusValue(d *drv1alpha1.DRPlacementControl) (float64, bool) {
	if d.Labels[drv1alpha1.GlobalVGRLabel] == "" {
		return 0, false
	}
	c := meta.FindStatusCondition(d.Status.Conditions, drv1alpha1.ConditionGlobalAction)
	if c == nil {
		return 0, false
	}
	if c.Status == metav1.ConditionTrue {
		return 1, true
	}
	return 0, true
}
