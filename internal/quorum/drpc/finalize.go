package drpc

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// finalize disables DR for the application: it deletes the VRGs on both
// clusters, leaves the application running where it is, drops the DRPC's
// metrics and releases the DRPC. A cluster that is unreachable holds the DRPC
// until it returns.
func (r *Reconciler) finalize(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.drpc, Finalizer) {
		return ctrl.Result{}, nil
	}
	s.setPhase(drv1alpha1.DRStateDeleting, "deleting the VolumeReplicationGroups of %s", s.drpc.Name)
	s.setProgression(drv1alpha1.ProgressionDeleting)
	if _, err := r.load(ctx, s); err != nil {
		// Without the policy or group nothing says where the VRGs are.
		s.events = append(s.events, flow.Event{Type: corev1.EventTypeWarning, Reason: flow.ReasonOf(err, srv1alpha1.ReasonInvalidSpec),
			Message: "VolumeReplicationGroups not deleted: " + err.Error()})
		return ctrl.Result{}, r.release(ctx, s)
	}
	if _, err := r.connect(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	all := true
	var errs []error
	for _, c := range s.clusters {
		done, err := r.deleteVRG(ctx, s, c)
		errs = append(errs, err)
		all = all && done
	}
	if err := errors.Join(errs...); err != nil || !all {
		if werr := r.writeStatus(ctx, s); werr != nil {
			err = errors.Join(err, werr)
		}
		return flow.After(unreachableRetry), err
	}
	if err := r.deleteKey(ctx, s.drpc); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.release(ctx, s)
}

// release drops the metrics and the finalizer.
func (r *Reconciler) release(ctx context.Context, s *scope) error {
	if err := r.writeStatus(ctx, s); err != nil {
		return err
	}
	r.Metrics.forget(s.drpc.Namespace, s.drpc.Name)
	before := s.drpc.DeepCopy()
	controllerutil.RemoveFinalizer(s.drpc, Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, s.drpc, client.MergeFrom(before)))
}
