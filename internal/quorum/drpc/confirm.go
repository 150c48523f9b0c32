package drpc

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// dropConfirmation takes the typed confirmation (ConfirmAnnotation) off a
// DRPC at rest: the Failover it confirmed has been taken, or was withdrawn.
// The admission policy reads the confirmation on the write that asks for a
// Failover; left on the DRPC, it would confirm the next Failover too, which
// must be confirmed anew. The patch carries the read's resourceVersion, so a
// new Failover asked since (with its own confirmation) makes it fail instead
// of losing that confirmation.
func (r *Reconciler) dropConfirmation(ctx context.Context, s *scope) error {
	if _, ok := s.drpc.Annotations[srv1alpha1.ConfirmAnnotation]; !ok {
		return nil
	}
	// A copy: the patch's answer would replace the status this reconcile has
	// computed so far.
	d := s.drpc.DeepCopy()
	delete(d.Annotations, srv1alpha1.ConfirmAnnotation)
	if err := r.Client.Patch(ctx, d, client.MergeFromWithOptions(s.drpc, client.MergeFromWithOptimisticLock{})); err != nil {
		return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("removing the used confirmation %s from DRPlacementControl %s: %w",
			srv1alpha1.ConfirmAnnotation, s.drpc.Name, err))
	}
	s.drpc.Annotations, s.drpc.ResourceVersion = d.Annotations, d.ResourceVersion
	return nil
}
