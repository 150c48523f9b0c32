package vrg

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// reachConsensus is the GlobalState check, on both the primary and
// the secondary path: every VRG of the group on this cluster must want the same
// replicationState before the shared VGR is touched.
func (r *Reconciler) reachConsensus(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.volsync {
		// A VolSync group has no shared object to agree on: each cluster's half
		// is its own RGS or RGD.
		s.consensus = true
		return ctrl.Result{}, nil
	}
	name := s.globalName()
	if name == "" {
		s.consensus = true
		return ctrl.Result{}, nil
	}
	members, err := r.groupMembers(ctx, name)
	if err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("listing VRGs of %s: %w", name, err))
	}
	s.peers = s.peers[:0]
	for _, m := range members {
		if m.Namespace != s.vrg.Namespace || m.Name != s.vrg.Name {
			s.peers = append(s.peers, m)
		}
	}
	state := s.vrg.Spec.ReplicationState
	pending := pendingPeers(s.peers, func(p *drv1alpha1.VolumeReplicationGroup) bool {
		return p.Spec.ReplicationState == state
	})
	cond := metav1.Condition{Type: drv1alpha1.ConditionGlobalState, ObservedGeneration: s.vrg.Generation}
	if len(pending) == 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, drv1alpha1.ReasonConsensusReached
		cond.Message = fmt.Sprintf(drv1alpha1.MessageConsensusStateFmt, state)
		meta.SetStatusCondition(&s.vrg.Status.Conditions, cond)
		s.consensus = true
		return ctrl.Result{}, nil
	}
	cond.Status, cond.Reason = metav1.ConditionFalse, drv1alpha1.ReasonConsensusNotReached
	cond.Message = fmt.Sprintf(drv1alpha1.MessageWaitingStateFmt, state, strings.Join(pending, ", "))
	meta.SetStatusCondition(&s.vrg.Status.Conditions, cond)
	s.progress = cond.Message
	return ctrl.Result{}, flow.Waiting(reasonConsensus, consensusRetry, "%s", cond.Message)
}

// pendingPeers returns "<namespace>/<name>" of the peers that do not satisfy ok, sorted.
func pendingPeers(peers []drv1alpha1.VolumeReplicationGroup, ok func(*drv1alpha1.VolumeReplicationGroup) bool) []string {
	var pending []string
	for i := range peers {
		if !ok(&peers[i]) {
			pending = append(pending, peers[i].Namespace+"/"+peers[i].Name)
		}
	}
	sort.Strings(pending)
	return pending
}

// setGlobalSecondary advertises whether this VRG's PVCs let the shared VGR turn
// secondary.
func setGlobalSecondary(s *scope, notReady []string) {
	cond := metav1.Condition{Type: drv1alpha1.ConditionGlobalSecondary, ObservedGeneration: s.vrg.Generation}
	switch {
	case s.primary():
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, drv1alpha1.ReasonUnused, drv1alpha1.MessageUnusedWhenPrimary
	case len(notReady) == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, drv1alpha1.ReasonPVCsNotInUse, drv1alpha1.MessagePVCsNotInUse
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, drv1alpha1.ReasonPVCsInUse, drv1alpha1.MessagePVCsInUse
	}
	meta.SetStatusCondition(&s.vrg.Status.Conditions, cond)
}

// siblingsNotReady lists the peers whose GlobalSecondary is not True/PVCsNotInUse for
// their current generation.
func siblingsNotReady(s *scope) []string {
	return pendingPeers(s.peers, func(p *drv1alpha1.VolumeReplicationGroup) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, drv1alpha1.ConditionGlobalSecondary)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == drv1alpha1.ReasonPVCsNotInUse &&
			c.ObservedGeneration == p.Generation
	})
}
