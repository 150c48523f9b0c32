package vrg

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// ensureFinalizer holds the VRG until finalize has cleaned up after it.
func (r *Reconciler) ensureFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	if controllerutil.ContainsFinalizer(s.vrg, VRGFinalizer) {
		return ctrl.Result{}, nil
	}
	if err := r.patchMeta(ctx, s, func(v *drv1alpha1.VolumeReplicationGroup) { controllerutil.AddFinalizer(v, VRGFinalizer) }); err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonPatchFailed, fmt.Errorf("adding finalizer: %w", err))
	}
	return ctrl.Result{}, nil
}

// finalize is the cleanup path for a VRG being deleted: it lets go of
// its PVCs, deletes its VolSync groups, the shared VGR only when every VRG of the group is being deleted,
// and removes its own finalizer last. A VRG whose peers live on does not wait for
// them: the VGR is kept and the last VRG of the group deletes it.
func (r *Reconciler) finalize(ctx context.Context, s *scope) error {
	if !controllerutil.ContainsFinalizer(s.vrg, VRGFinalizer) {
		return nil
	}
	if err := r.releasePVCs(ctx, s); err != nil {
		return flow.Transient(srv1alpha1.ReasonPatchFailed, err)
	}
	if err := r.deletePSK(ctx, s); err != nil {
		return err
	}
	// The VolSync groups' own finalizers delete their snapshots, restored
	// PVCs, movers and received images; owner references alone would leave
	// that to a garbage collector, which a cluster may run late or not at all.
	if err := r.deleteRGSs(ctx, s, nil); err != nil {
		return err
	}
	if err := r.deleteRGDs(ctx, s, nil); err != nil {
		return err
	}
	if name := s.globalName(); name != "" {
		members, err := r.groupMembers(ctx, name)
		if err != nil {
			return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("listing VRGs of %s: %w", name, err))
		}
		alive := pendingPeers(members, func(v *drv1alpha1.VolumeReplicationGroup) bool { return !v.DeletionTimestamp.IsZero() })
		if len(alive) == 0 {
			if err := r.deleteVGR(ctx, s, name); err != nil {
				return err
			}
		} else {
			log.FromContext(ctx).Info("keeping the global VGR for live peers", "vgr", name, "peers", alive)
			r.Recorder.Eventf(s.vrg, corev1.EventTypeNormal, reasonVGRKept, "VolumeGroupReplication %s kept for %d VRGs not being deleted", name, len(alive))
		}
	}
	if err := r.patchMeta(ctx, s, func(v *drv1alpha1.VolumeReplicationGroup) { controllerutil.RemoveFinalizer(v, VRGFinalizer) }); err != nil {
		return flow.Transient(srv1alpha1.ReasonPatchFailed, fmt.Errorf("removing finalizer: %w", err))
	}
	return nil
}
