package vrg

import (
	"context"
	"fmt"
	"strings"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// replicate drives the shared VGR towards the VRG's replicationState once consensus is
// reached.
func (r *Reconciler) replicate(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.volsync {
		return r.replicateVolSync(ctx, s)
	}
	if err := r.loadVGR(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if s.primary() {
		return ctrl.Result{}, r.replicateAsPrimary(ctx, s)
	}
	return ctrl.Result{}, r.replicateAsSecondary(ctx, s)
}

// replicateAsPrimary protects the PVCs and creates or promotes the shared VGR; the VGR
// is only created when this cluster has PVCs to protect.
func (r *Reconciler) replicateAsPrimary(ctx context.Context, s *scope) error {
	setGlobalSecondary(s, nil)
	if len(s.pvcs) == 0 {
		s.pvcsProcessed = true
		return nil
	}
	if err := r.protectPVCs(ctx, s, true); err != nil {
		return flow.Transient(srv1alpha1.ReasonPatchFailed, err)
	}
	if err := r.ensureVGR(ctx, s, replicationv1alpha1.Primary, true); err != nil {
		return err
	}
	s.pvcsProcessed = true
	return nil
}

// replicateAsSecondary demotes the shared VGR once every VRG of the group on this
// cluster reports its PVCs unused, and lets go of the PVCs once the
// VGR is secondary. A VGR is never created or deleted here.
func (r *Reconciler) replicateAsSecondary(ctx context.Context, s *scope) error {
	notReady, err := r.readyForSecondary(ctx, s)
	if err != nil {
		return flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	setGlobalSecondary(s, notReady)
	if s.vgr == nil {
		// Nothing replicates on this cluster: a steady-state secondary.
		s.pvcsProcessed = true
		s.pvcs = nil
		return r.release(ctx, s)
	}
	if s.vgr.Spec.ReplicationState != replicationv1alpha1.Secondary {
		if len(notReady) > 0 {
			s.progress = "PVCs still in use: " + strings.Join(notReady, ", ")
			return flow.Waiting(reasonGating, consensusRetry, "%s", s.progress)
		}
		if pending := siblingsNotReady(s); len(pending) > 0 {
			s.progress = "waiting for VRGs to release their PVCs before VolumeGroupReplication " + s.vgr.Name +
				" turns secondary, pending: " + strings.Join(pending, ", ")
			log.FromContext(ctx).Info("secondary transition gated", "pending", pending)
			return flow.Waiting(reasonGating, consensusRetry, "%s", s.progress)
		}
	}
	if err := r.ensureVGR(ctx, s, replicationv1alpha1.Secondary, false); err != nil {
		return err
	}
	s.pvcsProcessed = true
	if s.vgr.Status.State != replicationv1alpha1.SecondaryState {
		s.progress = fmt.Sprintf("VolumeGroupReplication %s is %q, waiting for Secondary", s.vgr.Name, s.vgr.Status.State)
		return nil
	}
	return r.release(ctx, s)
}

func (r *Reconciler) release(ctx context.Context, s *scope) error {
	if err := r.releasePVCs(ctx, s); err != nil {
		return flow.Transient(srv1alpha1.ReasonPatchFailed, err)
	}
	return nil
}
