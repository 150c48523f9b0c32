package failover

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// waitingForDRBD moves the DRBD primary role from source to target, one intent
// write per cluster and step (intent.go): demote the source (planned, and
// waited for), run the taint safety check, then promote the target once it is
// promotable — forcing only in an unplanned failover.
func (r *Reconciler) waitingForDRBD(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.loadGroupAndZone(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	tgt, err := r.Remote.Get(s.key(s.target()))
	if err != nil {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "cannot reach target %s yet: %w", s.target(), err)
	}
	targetRes, err := s.replicasOf(ctx, tgt)
	if err != nil {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%w", err)
	}
	if len(targetRes) == 0 && len(s.group.Spec.VirtualMachines) > 0 {
		return ctrl.Result{}, flow.Stalled("NoReplicas", "group %s has no DRBDResources on %s: its VMs are not protected there", s.group.Name, s.target())
	}

	if s.unplanned() {
		if err := r.readLoss(ctx, s, targetRes); err != nil {
			return ctrl.Result{}, err
		}
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
		if s.unplanned() {
			return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%s", msg)
		}
		// A planned demotion DRBD keeps refusing (a device still held open)
		// ends with the drain budget, as VMs that do not stop do.
		left := r.drainLeft(s)
		if left <= 0 {
			src, _ := r.Remote.Get(s.key(s.source()))
			return ctrl.Result{}, r.abortDemotion(ctx, s, src, msg)
		}
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, min(unreachableRetry, left), "%s", msg)
	}
	var gaps map[string]syncGap
	if !s.unplanned() {
		var err error
		if gaps, err = r.sourceGaps(ctx, s); err != nil {
			return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "%w", err)
		}
	}
	var pending, notReady []string
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
		}
	}
	if len(notReady) > 0 && r.drainLeft(s) <= 0 {
		return ctrl.Result{}, r.abortResync(ctx, s, tgt, targetRes, gaps)
	}
	// The group's role is asked once for all its replicas: a planned failover
	// once every one of them is ready, an unplanned one at once.
	promote := len(pending) > 0 && len(notReady) == 0
	// The taint check: only when it is about to matter, before the promotion
	// and before the group may start there.
	if promote || len(pending) == 0 {
		if err := r.checkTaints(ctx, s, tgt); err != nil {
			return ctrl.Result{}, err
		}
	}
	if promote {
		if err := r.fenceDivergingSource(ctx, s, tgt, targetRes); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.promote(ctx, s, tgt); err != nil {
			return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%w", err)
		}
	}
	if len(pending) > 0 {
		sort.Strings(pending)
		// The agents report each promotion, which wakes the request.
		var recheck time.Duration
		if len(notReady) > 0 {
			recheck = r.drainLeft(s) // no DRBD event may come while the link is down
		}
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, recheck, "waiting for DRBD on %s to be promotable and promoted: %s%s%s", s.target(), flow.Listed(pending), refusals(targetRes), describeGaps(gaps))
	}
	s.trail.Condition(srv1alpha1.ConditionTargetPromoted, metav1.ConditionTrue, "Promoted", fmt.Sprintf("%d DRBD resources are Primary on %s", len(targetRes), s.target()))
	s.trail.Enter(srv1alpha1.FailoverStartingOnTarget, "DRBD primary on %s; starting group %s there", s.target(), s.group.Name)
	return ctrl.Result{}, nil
}

// promote asks the target's replicas to be Primary. A planned failover asks
// them to run in the same write (promoteAndRun): the target's pg-controller
// starts the VMs once every replica is Primary. An unplanned one asks a
// forced promotion alone, and the VMs to run only once it is done
// (startingOnTarget): a forced promotion keeps each replica's quorum until
// then.
func (r *Reconciler) promote(ctx context.Context, s *scope, tgt *remote.Remote) error {
	if s.unplanned() {
		return setIntent(ctx, tgt, s.req.Namespace, s.group.Name, promotionIntent(s))
	}
	return r.asked.ask(ctx, s, tgt, promoteAndRun())
}

// demoteSource asks every source replica to be Secondary. A planned failover
// waits until each is asked so and none reports Primary; an unplanned one
// asks once and goes on.
func (r *Reconciler) demoteSource(ctx context.Context, s *scope) (bool, string) {
	src, err := r.Remote.Get(s.key(s.source()))
	if err != nil {
		return s.unplanned(), fmt.Sprintf("cannot reach source %s to demote DRBD: %s", s.source(), err.Error())
	}
	want := secondaryIntent()
	if err := r.asked.ask(ctx, s, src, stopAndDemote()); err != nil {
		return s.unplanned(), err.Error()
	}
	res, err := s.replicasOf(ctx, src)
	if err != nil {
		return s.unplanned(), err.Error()
	}
	var primaries []string
	for i := range res {
		if res[i].Status.Role == string(srv1alpha1.RolePrimary) {
			primaries = append(primaries, res[i].Name)
		}
	}
	if s.unplanned() {
		return true, ""
	}
	if len(primaries) > 0 {
		// Sorted: the message changes, and the status is written, only when the
		// set does, not with the order the cache lists them in.
		sort.Strings(primaries)
		return false, fmt.Sprintf("waiting for DRBD on %s to become Secondary: %s%s", s.source(), flow.Listed(primaries), demotionRefusals(res))
	}
	if pg, _ := workloadGroup(ctx, src, s.req.Namespace, s.group.Name); !carries(pg, res, want) {
		return false, fmt.Sprintf("waiting for pg-controller on %s to ask every replica of %s to be Secondary", s.source(), s.group.Name)
	}
	return true, ""
}

// demotionRefusals summarises the demotions the agents could not carry out,
// with DRBD's reason: a device held open ("(-12) Device is held open by
// someone") names what still uses the VM's disk.
func demotionRefusals(res []srv1alpha1.DRBDResource) string {
	var out []string
	for _, r := range res {
		if r.Spec.Role != srv1alpha1.RoleSecondary || r.Status.Role != string(srv1alpha1.RolePrimary) {
			continue
		}
		for _, c := range r.Status.Conditions {
			if c.Type == srv1alpha1.ConditionRoleApplied && c.Status == metav1.ConditionFalse && c.Reason == srv1alpha1.ReasonAdmFailed {
				out = append(out, r.Name+": "+c.Message)
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	sort.Strings(out)
	return "; refused: " + flow.ListedWith(out, "; ")
}

// abortDemotion ends a planned failover whose source replicas did not
// become Secondary within drainTimeoutSeconds (a Stalled error). Nothing was
// promoted on the target: the group is asked to run on the source again,
// Primary there, as after VMs that did not stop.
func (r *Reconciler) abortDemotion(ctx context.Context, s *scope, src *remote.Remote, waited string) error {
	r.thawSource(ctx, s, src)
	restored, err := restartSource(ctx, s, src)
	if err != nil {
		return err
	}
	s.trail.Condition(srv1alpha1.ConditionSourceStopped, metav1.ConditionFalse, srv1alpha1.ReasonDrainTimeout, "DRBD did not become Secondary in time")
	return flow.Stalled(srv1alpha1.ReasonDrainTimeout, "DRBD on %s did not become Secondary within drainTimeoutSeconds=%d (%s); nothing was promoted on %s and %s",
		s.source(), s.req.Spec.DrainTimeoutSeconds, waited, s.target(), restored)
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
	return "; refused: " + flow.ListedWith(out, "; ")
}
