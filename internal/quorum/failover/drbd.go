package failover

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// waitingForDRBD moves the DRBD primary role from source to target:
// demote the source (planned), run the taint safety check and remove the
// lost-quorum taint from the target's replica nodes, then promote the target once
// it is promotable — forcing only in an unplanned failover.
func (r *Reconciler) waitingForDRBD(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.loadGroupAndZone(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	tgt, err := r.Remote.Get(s.key(s.target()))
	if err != nil {
		return ctrl.Result{}, flow.Waiting(ReasonClusterUnreachable, unreachableRetry, "cannot reach target %s yet: %s", s.target(), err.Error())
	}
	targetRes, err := drbdResources(ctx, tgt, s.group.Name)
	if err != nil {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%s", err.Error())
	}
	if len(targetRes) == 0 && len(s.group.Spec.VirtualMachines) > 0 {
		return ctrl.Result{}, flow.Stalled("NoReplicas", "group %s has no DRBDResources on %s: its VMs are not protected there", s.group.Name, s.target())
	}

	if s.unplanned() {
		r.reportLag(ctx, s, targetRes)
		// Never a second Primary beside a connected one (fencing.go).
		if err := r.sourceStillPrimary(ctx, s, tgt, targetRes); err != nil {
			return ctrl.Result{}, err
		}
	}
	if restoring(s) {
		gaps, _ := r.sourceGaps(ctx, s)
		return ctrl.Result{}, r.abortResync(ctx, s, tgt, targetRes, gaps)
	}
	if done, msg := r.demoteSource(ctx, s); !done {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%s", msg)
	}
	var gaps map[string]syncGap
	if !s.unplanned() {
		var err error
		if gaps, err = r.sourceGaps(ctx, s); err != nil {
			return ctrl.Result{}, flow.Waiting(ReasonClusterUnreachable, unreachableRetry, "%s", err.Error())
		}
	}
	var pending, notReady []string
	var promote []int
	for i := range targetRes {
		res := &targetRes[i]
		if res.Status.Role == string(srv1alpha1.RolePrimary) {
			continue
		}
		pending = append(pending, res.Namespace+"/"+res.Name)
		if g, known := gaps[res.Name]; !s.unplanned() && (!res.Status.Promotable || known && g.behind()) {
			// A planned failover never forces; it waits until the target is
			// promotable and the source has sent it everything (resync.go).
			notReady = append(notReady, res.Name)
			continue
		}
		if res.Spec.Role == srv1alpha1.RolePrimary && res.Spec.ForcePromotion == promoteForced(s, res) {
			continue // asked already; the agent reports the outcome
		}
		promote = append(promote, i)
	}
	if len(notReady) > 0 && r.drainLeft(s) <= 0 {
		return ctrl.Result{}, r.abortResync(ctx, s, tgt, targetRes, gaps)
	}
	// The taint check reads the target's nodes: only when it is about to matter,
	// before the first promotion and before the group may start there.
	if len(promote) > 0 || len(pending) == 0 {
		if err := r.clearTaints(ctx, s, tgt, targetRes); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := flow.ForEach(parallelWrites, len(promote), func(i int) error {
		res := &targetRes[promote[i]]
		return r.setRole(ctx, tgt, res, srv1alpha1.RolePrimary, promoteForced(s, res), promotionQuorum(s, res))
	}); err != nil {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%s", err.Error())
	}
	if len(pending) > 0 {
		sort.Strings(pending)
		// The agents report each promotion, which wakes the request.
		var recheck time.Duration
		if len(notReady) > 0 {
			recheck = r.drainLeft(s) // no DRBD event may come while the link is down
		}
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, recheck, "waiting for DRBD on %s to be promotable and promoted: %s%s%s", s.target(), strings.Join(pending, ", "), refusals(targetRes), describeGaps(gaps))
	}
	s.trail.Condition(srv1alpha1.ConditionTargetPromoted, metav1.ConditionTrue, "Promoted", fmt.Sprintf("%d DRBD resources are Primary on %s", len(targetRes), s.target()))
	s.trail.Enter(srv1alpha1.FailoverStartingOnTarget, "DRBD primary on %s; starting group %s there", s.target(), s.group.Name)
	return ctrl.Result{}, nil
}

// promotionQuorum is the quorum sent with a promotion. A planned failover
// promotes only a promotable replica whose peer is Secondary, so the primary's
// quorum (off, see QuorumForRole) goes in the same request and the agents apply
// it with the role. An unplanned one keeps the quorum until the replica is
// Primary (dropTargetQuorum): a forced promotion must be decided on the state
// DRBD had, not race with a quorum change.
func promotionQuorum(s *scope, res *srv1alpha1.DRBDResource) srv1alpha1.QuorumSettings {
	if s.unplanned() {
		return keptQuorum(res)
	}
	return srv1alpha1.QuorumForRole(srv1alpha1.RolePrimary)
}

// dropTargetQuorum gives the new primaries the quorum of their role (off, see
// QuorumForRole) where their promotion did not carry it: after an unplanned
// failover (promotionQuorum). It runs once they are all Primary, while the VMs
// start, and writes nothing after a planned one.
func (r *Reconciler) dropTargetQuorum(ctx context.Context, tgt *remote.Remote, group string) error {
	res, err := drbdResources(ctx, tgt, group)
	if err != nil {
		return err
	}
	q := srv1alpha1.QuorumForRole(srv1alpha1.RolePrimary)
	var drop []int
	for i := range res {
		if res[i].Spec.Quorum != q {
			drop = append(drop, i)
		}
	}
	return flow.ForEach(parallelWrites, len(drop), func(i int) error {
		d := &res[drop[i]]
		return r.setRole(ctx, tgt, d, srv1alpha1.RolePrimary, d.Spec.ForcePromotion, q)
	})
}

// demoteSource makes every source replica Secondary. A planned failover waits for
// it; an unplanned one tries once and goes on.
func (r *Reconciler) demoteSource(ctx context.Context, s *scope) (bool, string) {
	src, err := r.Remote.Get(s.key(s.source()))
	if err != nil {
		return s.unplanned(), fmt.Sprintf("cannot reach source %s to demote DRBD: %s", s.source(), err.Error())
	}
	res, err := drbdResources(ctx, src, s.group.Name)
	if err != nil {
		return s.unplanned(), err.Error()
	}
	// A demoted replica is fenced by quorum (QuorumForRole), in the same request.
	q := srv1alpha1.QuorumForRole(srv1alpha1.RoleSecondary)
	var primaries []string
	var demote []int
	for i := range res {
		if res[i].Spec.Role != srv1alpha1.RoleSecondary || res[i].Spec.ForcePromotion || res[i].Spec.Quorum != q {
			demote = append(demote, i)
		}
		if res[i].Status.Role == string(srv1alpha1.RolePrimary) {
			primaries = append(primaries, res[i].Name)
		}
	}
	if err := flow.ForEach(parallelWrites, len(demote), func(i int) error {
		return r.setRole(ctx, src, &res[demote[i]], srv1alpha1.RoleSecondary, false, q)
	}); err != nil {
		return s.unplanned(), err.Error()
	}
	if len(primaries) > 0 && !s.unplanned() {
		// Sorted: the message changes, and the status is written, only when the
		// set does, not with the order the cache lists them in.
		sort.Strings(primaries)
		return false, fmt.Sprintf("waiting for DRBD on %s to become Secondary: %s", s.source(), strings.Join(primaries, ", "))
	}
	return true, ""
}

// clearTaints removes the lost-quorum taint from the nodes that hold the target
// replicas, unless another group of this namespace runs on the target cluster and
// the request does not force it. A Waiting error says what holds it.
func (r *Reconciler) clearTaints(ctx context.Context, s *scope, tgt *remote.Remote, targetRes []srv1alpha1.DRBDResource) error {
	var taintedNodes []string
	seen := map[string]bool{}
	for _, res := range targetRes {
		if seen[res.Spec.NodeName] {
			continue
		}
		seen[res.Spec.NodeName] = true
		t, err := tainted(ctx, tgt, res.Spec.NodeName)
		if err != nil {
			return flow.Waiting(srv1alpha1.ReasonProgressing, 0, "reading node %s on %s: %s", res.Spec.NodeName, s.target(), err.Error())
		}
		if t {
			taintedNodes = append(taintedNodes, res.Spec.NodeName)
		}
	}
	if len(taintedNodes) == 0 {
		return nil
	}
	others, err := otherRunningGroups(ctx, tgt, s.req.Namespace, s.group.Name)
	if err != nil {
		return err
	}
	if len(others) > 0 && !s.req.Spec.Force {
		msg := fmt.Sprintf("not removing %s from %s on %s: groups %s run there; wait for them or set force",
			srv1alpha1.LostQuorumTaintKey, strings.Join(taintedNodes, ", "), s.target(), strings.Join(others, ", "))
		s.trail.Condition(srv1alpha1.ConditionTargetPromoted, metav1.ConditionFalse, srv1alpha1.ReasonTaintConflict, msg)
		return flow.Waiting(srv1alpha1.ReasonTaintConflict, 0, "%s", msg)
	}
	for _, n := range taintedNodes {
		if _, err := untaint(ctx, tgt, n); err != nil {
			return err
		}
	}
	// The taints are gone whatever happens to this reconcile's status write, so
	// the event is recorded now rather than with the status (a write conflict
	// would drop it, and the retry finds no taint to report).
	if r.Recorder != nil {
		r.Recorder.Eventf(s.req, corev1.EventTypeNormal, "TaintRemoved", "removed %s from %s on %s",
			srv1alpha1.LostQuorumTaintKey, strings.Join(taintedNodes, ", "), s.target())
	}
	return nil
}

// promoteForced is whether a promotion must be forced: only in an unplanned
// failover, and only where DRBD refuses or would refuse a normal one.
func promoteForced(s *scope, res *srv1alpha1.DRBDResource) bool {
	return s.unplanned() && (!res.Status.Promotable || promotionRefused(res) || fenced(res))
}

// parallelWrites bounds the writes to one workload cluster in flight at once.
const parallelWrites = 10

func promotionRefused(r *srv1alpha1.DRBDResource) bool {
	for _, c := range r.Status.Conditions {
		if c.Type == srv1alpha1.ConditionRoleApplied && c.Status == metav1.ConditionFalse && c.Reason == srv1alpha1.ReasonPromotionRefused {
			return true
		}
	}
	return false
}

// refusals summarises promotions the agents refused, for the waiting message.
func refusals(res []srv1alpha1.DRBDResource) string {
	var out []string
	for _, r := range res {
		for _, c := range r.Status.Conditions {
			if c.Type == srv1alpha1.ConditionRoleApplied && c.Status == metav1.ConditionFalse && c.Reason == srv1alpha1.ReasonPromotionRefused {
				out = append(out, r.Name+": "+c.Message)
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; refused: " + strings.Join(out, "; ")
}
