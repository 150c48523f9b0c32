package protection

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// unprotectSteps remove protection in order; each is idempotent and reads the
// world (and ConditionUnprotecting) to know what is left, so a removal that
// stopped anywhere resumes. A step that cannot finish now returns a Waiting
// error that says what it waits for; it stops the steps after it.
func (r *Reconciler) unprotectSteps() []flow.Phase[*scope] {
	return []flow.Phase[*scope]{r.loadForDelete, r.locate, r.leaveGroup, r.restoreVMs, r.removeStack, r.releaseClaims}
}

// reconcileDelete removes protection from a deleted request and then lets it go.
// It never fails the request: what cannot go on now is a wait whose reason and
// message say what it waits for.
func (r *Reconciler) reconcileDelete(ctx context.Context, req *srv1alpha1.ProtectionRequest) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(req, Finalizer) {
		return ctrl.Result{}, nil
	}
	s := newScope(req, r.now())
	if !reached(req, srv1alpha1.ProtectionProvisioningTarget) {
		return ctrl.Result{}, r.release(ctx, s, corev1.EventTypeNormal, ReasonUnprotected,
			"deleted before anything was created on the workload clusters; nothing to remove")
	}
	s.trail.Wait(ReasonUnprotecting, "removing protection of VirtualMachine %s", s.vmKey())
	err := r.unprotect(ctx, s)
	if err == nil {
		return ctrl.Result{}, r.release(ctx, s, corev1.EventTypeNormal, ReasonUnprotected, doneMessage(s))
	}
	var e *flow.Error
	switch {
	case errors.As(err, &e) && e.Reason == srv1alpha1.ReasonZoneNotFound:
		// Without its zone no cluster can be reached, ever again; holding the
		// request would only block the deletion of its namespace.
		return ctrl.Result{}, r.release(ctx, s, corev1.EventTypeWarning, srv1alpha1.ReasonZoneNotFound, fmt.Sprintf(
			"ProtectionZone %s no longer exists, so its clusters cannot be reached: what this request created on them (label %s=%s) and the VM's disks were left as they are",
			s.req.Spec.ZoneRef.Name, srv1alpha1.ProtectionRequestLabel, s.req.Name))
	case err != nil:
		setCondition(s.req, srv1alpha1.ConditionReady, metav1.ConditionFalse, flow.ReasonOf(err, ReasonRequestFailed), "%s", err.Error())
	}
	noteHold(s)
	if perr := r.persist(ctx, s); perr != nil {
		return ctrl.Result{}, errors.Join(err, perr)
	}
	return flow.Result(ctrl.Result{RequeueAfter: s.requeueAfter}, err)
}

// unprotect runs the steps in order until one has to wait.
func (r *Reconciler) unprotect(ctx context.Context, s *scope) error {
	_, err := flow.RunPhases(ctx, s, r.unprotectSteps()...)
	return r.unreachable(s, err, "removing protection")
}

// loadForDelete connects both clusters and checks that they answer: removing
// protection writes to both, and a cluster that does not answer holds it.
func (r *Reconciler) loadForDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.load(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	for _, sd := range s.sides() {
		if r.Remote.Health(sd.rc.Key).Unreachable() {
			return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry,
				"cluster %s is unreachable; removing protection resumes when it answers again", sd.cluster)
		}
	}
	return ctrl.Result{}, nil
}

// noteHold records an event when the deletion's Ready reason changed: holds are
// warnings, progress is normal.
func noteHold(s *scope) {
	now := meta.FindStatusCondition(s.req.Status.Conditions, srv1alpha1.ConditionReady)
	was := meta.FindStatusCondition(s.before.Status.Conditions, srv1alpha1.ConditionReady)
	if now == nil || (was != nil && was.Reason == now.Reason) {
		return
	}
	kind := corev1.EventTypeNormal
	switch now.Reason {
	case ReasonFailedOver, ReasonFailoverInProgress, srv1alpha1.ReasonClusterUnreachable, ReasonRequestFailed:
		kind = corev1.EventTypeWarning
	}
	s.trail.Events = append(s.trail.Events, flow.Event{Type: kind, Reason: now.Reason, Message: now.Message})
}

func doneMessage(s *scope) string {
	if s.stayOn != "" && s.stayOn == s.target {
		return fmt.Sprintf("replication removed; VirtualMachine %s stays on %s on its DR backing PVCs and is left Halted on %s on its original PVCs",
			s.vmKey(), s.target, s.primaryCluster)
	}
	return fmt.Sprintf("protection removed; VirtualMachine %s is on its original PVCs on %s", s.vmKey(), s.primaryCluster)
}

// reached reports whether the request ever entered phase p.
func reached(req *srv1alpha1.ProtectionRequest, p srv1alpha1.ProtectionPhase) bool {
	for _, h := range req.Status.PhaseHistory {
		if h.Phase == string(p) {
			return true
		}
	}
	return false
}
