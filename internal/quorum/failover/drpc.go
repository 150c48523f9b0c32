package failover

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// The Offloaded and VolSync backends do not replicate with DRBD: their groups are
// placed by a DRPlacementControl (internal/quorum/drpc). For such a group the request sets
// the DRPC's action (planned → Relocate to preferredCluster, unplanned → Failover
// to failoverCluster) and mirrors the DRPC's progression into its own phases:
//
//	DRPC phase / progression                                  request phase
//	Deployed|Initiating (action not started, WaitOnGlobalAction),
//	Relocating: PreparingFinalSync, RunningFinalSync,
//	            EnsuringVolumesAreSecondary                     StoppingOnSource
//	FailingOver: FailingOverToCluster,
//	Relocating: WaitForReadiness                                WaitingForDRBD (the
//	                                                            data becomes primary
//	                                                            on the target)
//	FailingOver|Relocating: UpdatedPlacement                    StartingOnTarget
//	FailedOver|Relocated, Completed, on the target              Completed
//
// The request only moves forward: a progression that maps to an earlier phase
// than the request's (a status not yet recomputed for the new action) leaves it
// where it is. drainTimeoutSeconds + batchBootTimeoutSeconds, counted from the
// request's startTime, bound the whole DRPC path.

const (
	// ConditionDRPlacementControl mirrors the DRPC the request drives.
	ConditionDRPlacementControl = "DRPlacementControl"
	// ReasonNoDRPlacementControl means the group's zone needs a DRPC and there is none.
	ReasonNoDRPlacementControl = "NoDRPlacementControl"
	// ReasonManyDRPlacementControls means more than one DRPC names the group.
	ReasonManyDRPlacementControls = "MultipleDRPlacementControls"
	// ReasonDRPCTimeout means the DRPC did not finish within the request's timeouts.
	ReasonDRPCTimeout = "DRPlacementControlTimeout"
)

// drpcRetry is how soon a waiting request looks at its DRPC again; the DRPC
// watch usually wakes it earlier.
const drpcRetry = 10 * time.Second

// viaDRPC reports whether the group's zone is placed by DRPlacementControls.
func viaDRPC(z *srv1alpha1.ProtectionZone) bool {
	b := z.Spec.StorageBackend
	return b != "" && b != srv1alpha1.BackendDRBD
}

// onDRPCPath reports whether a request that left Pending drives a DRPC.
func onDRPCPath(s *scope) bool {
	return meta.FindStatusCondition(s.req.Status.Conditions, ConditionDRPlacementControl) != nil
}

// drpcAction is the DRPC action of the request and its target.
func (s *scope) drpcAction() drv1alpha1.DRAction {
	if s.unplanned() {
		return drv1alpha1.ActionFailover
	}
	return drv1alpha1.ActionRelocate
}

// findDRPC returns the one DRPC of the request's namespace whose
// protectionGroupRef names the group; it fails the request when there is none
// or more than one.
func (r *Reconciler) findDRPC(ctx context.Context, s *scope) (*drv1alpha1.DRPlacementControl, error) {
	list := &drv1alpha1.DRPlacementControlList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.req.Namespace)); err != nil {
		return nil, err
	}
	var found []*drv1alpha1.DRPlacementControl
	var names []string
	for i := range list.Items {
		if list.Items[i].Spec.ProtectionGroupRef.Name == s.group.Name {
			found = append(found, &list.Items[i])
			names = append(names, list.Items[i].Name)
		}
	}
	switch len(found) {
	case 0:
		s.trail.Condition(ConditionDRPlacementControl, metav1.ConditionFalse, ReasonNoDRPlacementControl, "no DRPlacementControl for group "+s.group.Name)
		return nil, flow.Stalled(ReasonNoDRPlacementControl, "zone %s uses the %s backend, so group %s moves through a DRPlacementControl, and namespace %s has none whose spec.protectionGroupRef.name is %s; create one (with a DRPolicy) and retry",
			s.zone.Name, s.zone.Spec.StorageBackend, s.group.Name, s.req.Namespace, s.group.Name)
	case 1:
		return found[0], nil
	}
	sort.Strings(names)
	s.trail.Condition(ConditionDRPlacementControl, metav1.ConditionFalse, ReasonManyDRPlacementControls, "DRPlacementControls "+strings.Join(names, ", "))
	return nil, flow.Stalled(ReasonManyDRPlacementControls, "group %s is named by more than one DRPlacementControl (%s); keep exactly one and retry",
		s.group.Name, strings.Join(names, ", "))
}

// startDRPC is the end of Pending on the DRPC path: it asks the group's DRPC for
// the action and enters StoppingOnSource.
func (r *Reconciler) startDRPC(ctx context.Context, s *scope) (ctrl.Result, error) {
	d, err := r.findDRPC(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	action, tgt := s.drpcAction(), s.target()
	if err := r.askDRPC(ctx, d, action, tgt); err != nil {
		return ctrl.Result{}, err
	}
	s.trail.Condition(ConditionDRPlacementControl, metav1.ConditionTrue, string(action),
		fmt.Sprintf("DRPlacementControl %s asked to %s to %s", d.Name, action, tgt))
	s.trail.Enter(srv1alpha1.FailoverStoppingOnSource, "asked DRPlacementControl %s to %s group %s from %s to %s", d.Name, action, s.group.Name, s.source(), tgt)
	return ctrl.Result{}, nil
}

// askDRPC sets the DRPC's action and its target cluster, when they differ.
func (r *Reconciler) askDRPC(ctx context.Context, d *drv1alpha1.DRPlacementControl, action drv1alpha1.DRAction, tgt string) error {
	if d.Spec.Action == action && actionTargetOf(d) == tgt {
		return nil
	}
	before := d.DeepCopy()
	d.Spec.Action = action
	if action == drv1alpha1.ActionFailover {
		d.Spec.FailoverCluster = tgt
		// The admission policy asks a Failover for the typed confirmation;
		// the request's own, checked when it was created, carries over.
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[srv1alpha1.ConfirmAnnotation] = d.Spec.ProtectionGroupRef.Name
	} else {
		d.Spec.PreferredCluster = tgt
	}
	if err := r.Client.Patch(ctx, d, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("setting action %s to %s on DRPlacementControl %s: %w", action, tgt, d.Name, err)
	}
	return nil
}

// mirrorDRPC runs every reconcile of a request on the DRPC path after Pending.
func (r *Reconciler) mirrorDRPC(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.loadGroupAndZone(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	d, err := r.findDRPC(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	action, tgt := s.drpcAction(), s.target()
	st := d.Status
	if d.Spec.Action == action && actionTargetOf(d) == tgt && st.ObservedGeneration == d.Generation &&
		st.Phase == atRest(action) && settledProgression(action, st.Progression) && st.PreferredDecision.ClusterName == tgt {
		if err := r.flipActiveCluster(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		recordRestoredImage(s, d)
		s.trail.Condition(ConditionDRPlacementControl, metav1.ConditionTrue, string(st.Phase), drpcSummary(d))
		s.trail.Condition(srv1alpha1.ConditionTargetRunning, metav1.ConditionTrue, "Running",
			fmt.Sprintf("DRPlacementControl %s placed %s on %s", d.Name, s.group.Name, tgt))
		s.trail.Succeed(srv1alpha1.ReasonFailoverCompleted, "DRPlacementControl %s %s group %s to %s (%s/%s); %s is now its active cluster",
			d.Name, strings.ToLower(string(st.Phase)), s.group.Name, tgt, st.Phase, st.Progression, tgt)
		return ctrl.Result{}, nil
	}

	limit := time.Duration(s.req.Spec.DrainTimeoutSeconds+s.req.Spec.BatchBootTimeoutSeconds) * time.Second
	start := s.now
	if s.req.Status.StartTime != nil {
		start = s.req.Status.StartTime.Time
	}
	left := start.Add(limit).Sub(s.now)
	if left <= 0 {
		s.trail.Condition(ConditionDRPlacementControl, metav1.ConditionFalse, ReasonDRPCTimeout, drpcSummary(d))
		return ctrl.Result{}, flow.Stalled(ReasonDRPCTimeout, "DRPlacementControl %s did not %s group %s to %s within drainTimeoutSeconds+batchBootTimeoutSeconds=%ds (phase %s, progression %s); the DRPlacementControl is left as it is, still asked to %s to %s, and keeps working on it",
			d.Name, action, s.group.Name, tgt, s.req.Spec.DrainTimeoutSeconds+s.req.Spec.BatchBootTimeoutSeconds, st.Phase, st.Progression, action, tgt)
	}

	// Someone may have changed the DRPC under the request; ask again rather
	// than mirror an action that is not ours.
	if err := r.askDRPC(ctx, d, action, tgt); err != nil {
		return ctrl.Result{}, err
	}

	if st.ObservedGeneration == d.Generation {
		if next := mirroredPhase(d); rank(next) > rank(s.req.Status.Phase) {
			r.enterMirrored(s, next, d)
		}
	}
	blocked := meta.FindStatusCondition(st.Conditions, drv1alpha1.ConditionGlobalAction)
	switch {
	case blocked != nil && blocked.Status == metav1.ConditionFalse:
		s.trail.Condition(ConditionDRPlacementControl, metav1.ConditionFalse, blocked.Reason, blocked.Message)
	default:
		s.trail.Condition(ConditionDRPlacementControl, metav1.ConditionTrue, string(action), drpcSummary(d))
	}
	return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, min(drpcRetry, left), "%s", drpcSummary(d))
}

// enterMirrored moves the request to the phase its DRPC reached, setting the
// conditions of the phases it passed.
func (r *Reconciler) enterMirrored(s *scope, phase srv1alpha1.FailoverPhase, d *drv1alpha1.DRPlacementControl) {
	if rank(phase) > rank(srv1alpha1.FailoverStoppingOnSource) && !s.unplanned() {
		s.trail.Condition(srv1alpha1.ConditionSourceStopped, metav1.ConditionTrue, "Stopped",
			fmt.Sprintf("DRPlacementControl %s stopped %s on %s and made its volumes secondary", d.Name, s.group.Name, s.source()))
	}
	if rank(phase) > rank(srv1alpha1.FailoverWaitingForDRBD) {
		s.trail.Condition(srv1alpha1.ConditionTargetPromoted, metav1.ConditionTrue, "Promoted",
			fmt.Sprintf("DRPlacementControl %s made the volumes of %s primary on %s", d.Name, s.group.Name, s.target()))
	}
	s.trail.Enter(phase, "%s", drpcSummary(d))
}

// mirroredPhase maps a DRPC's phase and progression to the request phase (see
// the table at the top of this file). A DRPC at rest maps to StoppingOnSource:
// completion is decided by the caller, which also checks the target.
func mirroredPhase(d *drv1alpha1.DRPlacementControl) srv1alpha1.FailoverPhase {
	switch d.Status.Progression {
	case drv1alpha1.ProgressionFailingOverToCluster:
		if d.Status.Phase == drv1alpha1.DRStateFailingOver {
			return srv1alpha1.FailoverWaitingForDRBD
		}
	case drv1alpha1.ProgressionWaitForReadiness:
		return srv1alpha1.FailoverWaitingForDRBD
	case drv1alpha1.ProgressionUpdatedPlacement:
		return srv1alpha1.FailoverStartingOnTarget
	}
	return srv1alpha1.FailoverStoppingOnSource
}

func rank(p srv1alpha1.FailoverPhase) int {
	switch p {
	case srv1alpha1.FailoverStoppingOnSource:
		return 1
	case srv1alpha1.FailoverWaitingForDRBD:
		return 2
	case srv1alpha1.FailoverStartingOnTarget:
		return 3
	}
	return 0
}

// drpcSummary describes where a DRPC is, with what its current step waits for
// when its Available condition says so.
func drpcSummary(d *drv1alpha1.DRPlacementControl) string {
	msg := fmt.Sprintf("DRPC %s: phase %s, progression %s", d.Name, d.Status.Phase, d.Status.Progression)
	if c := meta.FindStatusCondition(d.Status.Conditions, drv1alpha1.ConditionAvailable); c != nil && c.Status == metav1.ConditionFalse {
		if _, detail, ok := strings.Cut(c.Message, "waiting for "); ok {
			msg += ", waiting for " + detail
		}
	}
	return msg
}

// atRest is the DRPC phase that ends an action.
func atRest(a drv1alpha1.DRAction) drv1alpha1.DRState {
	if a == drv1alpha1.ActionFailover {
		return drv1alpha1.DRStateFailedOver
	}
	return drv1alpha1.DRStateRelocated
}

// actionTargetOf is the target cluster of a DRPC's action.
func actionTargetOf(d *drv1alpha1.DRPlacementControl) string {
	if d.Spec.Action == drv1alpha1.ActionFailover {
		return d.Spec.FailoverCluster
	}
	return d.Spec.PreferredCluster
}

// requestsOfDRPC wakes the unfinished requests of a DRPC's group when the DRPC
// changes.
func (r *Reconciler) requestsOfDRPC(ctx context.Context, obj client.Object) []reconcile.Request {
	d, ok := obj.(*drv1alpha1.DRPlacementControl)
	if !ok || d.Spec.ProtectionGroupRef.Name == "" {
		return nil
	}
	return r.activeRequests(ctx, d.Namespace, d.Spec.ProtectionGroupRef.Name)
}

// settledProgression reports whether the application runs on the target. A
// Failover whose old primary is down stays in Cleaning Up until that cluster
// returns, but its application already runs on the target, so that counts.
func settledProgression(action drv1alpha1.DRAction, p drv1alpha1.ProgressionStatus) bool {
	return p == drv1alpha1.ProgressionCompleted ||
		(action == drv1alpha1.ActionFailover && p == drv1alpha1.ProgressionCleaningUp)
}
