package failover

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// An unfinished request carries a finalizer, so that deleting it cannot leave a
// group half moved: the deletion waits until the flow is at a safe resting point
// and the request's outcome is in the group's history. Where that point is
// depends on the phase (srv1alpha1.FailoverDeletionEffect says it to the user):
//   - Pending: nothing started; the request ends at once.
//   - StoppingOnSource (DRBD path): nothing was promoted; the group is asked to
//     run on its source again, then the request ends as Failed/Cancelled.
//   - WaitingForDRBD, StartingOnTarget and the DRPC path: roles are moving or
//     have moved; the flow runs on to its end, and the request goes then. The
//     admission webhook refuses the deletion while DRBD roles change.

// addFinalizer puts the finalizer on a request that has not finished.
func (r *Reconciler) addFinalizer(ctx context.Context, fr *srv1alpha1.FailoverRequest) error {
	if !fr.DeletionTimestamp.IsZero() || controllerutil.ContainsFinalizer(fr, srv1alpha1.FailoverRequestFinalizer) {
		return nil
	}
	before := fr.DeepCopy()
	controllerutil.AddFinalizer(fr, srv1alpha1.FailoverRequestFinalizer)
	return r.Client.Patch(ctx, fr, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// removeFinalizer lets a finished request go.
func (r *Reconciler) removeFinalizer(ctx context.Context, fr *srv1alpha1.FailoverRequest) error {
	if !controllerutil.ContainsFinalizer(fr, srv1alpha1.FailoverRequestFinalizer) {
		return nil
	}
	before := fr.DeepCopy()
	controllerutil.RemoveFinalizer(fr, srv1alpha1.FailoverRequestFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, fr, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
}

// cancellable reports whether a request being deleted stops here rather than
// running on to its end.
func cancellable(s *scope) bool {
	if s.req.DeletionTimestamp.IsZero() {
		return false
	}
	switch s.req.Status.Phase {
	case "", srv1alpha1.FailoverPending:
		return true
	case srv1alpha1.FailoverFreezingOnSource, srv1alpha1.FailoverStoppingOnSource:
		return !onDRPCPath(s)
	}
	return false
}

// cancel ends a deleted request that moved no DRBD role: a group asked to stop
// is asked to run on its source again first.
func (r *Reconciler) cancel(ctx context.Context, s *scope) error {
	phase := s.req.Status.Phase
	restored := "the group was not touched"
	if phase == srv1alpha1.FailoverFreezingOnSource || phase == srv1alpha1.FailoverStoppingOnSource {
		if err := r.loadGroupAndZone(ctx, s); err != nil {
			return err
		}
		src, err := r.Remote.Get(s.key(s.source()))
		if err == nil {
			r.thawSource(ctx, s, src)
			_, err = setStep(ctx, src, s.req.Namespace, s.group.Name, runAgain())
		}
		if err != nil {
			return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry,
				"deleted while stopping group %s; waiting to reach source %s to run the group there again before the request goes: %w",
				s.group.Name, s.source(), err)
		}
		restored = fmt.Sprintf("group %s was asked to run on %s again; nothing was promoted on %s", s.group.Name, s.source(), s.target())
	}
	s.trail.Fail(srv1alpha1.ReasonCancelled, "the request was deleted in phase %s; %s", phaseName(phase), restored)
	return nil
}

func phaseName(p srv1alpha1.FailoverPhase) string {
	if p == "" {
		return string(srv1alpha1.FailoverPending)
	}
	return string(p)
}
