package protection

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// leaveGroup removes the VM from spec.virtualMachines of the quorum group (the
// group stays, even empty), then waits until pg-sync removed it from the group's
// copies on both clusters: until then their ProtectionGroup controllers would
// still start and stop the VM with the group, against the moves that follow.
func (r *Reconciler) leaveGroup(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !reached(s.req, srv1alpha1.ProtectionAddingToGroup) {
		return ctrl.Result{}, nil
	}
	// Once the VM left the group, the decision locate took from it is only
	// known from the status: write it first.
	if err := r.persist(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.removeMember(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	group := s.req.Spec.ProtectionGroupRef.Name
	for _, sd := range s.sides() {
		cp := &srv1alpha1.ProtectionGroup{}
		err := sd.rc.Direct.Get(ctx, types.NamespacedName{Namespace: s.req.Namespace, Name: group}, cp)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return ctrl.Result{}, remoteErr(sd.cluster, "reading the copy of ProtectionGroup "+group, err)
		case slices.Contains(cp.Spec.VirtualMachines, s.req.Spec.VirtualMachine):
			return ctrl.Result{}, flow.Waiting(ReasonWaitingForGroupSync, 0, "waiting for pg-sync to remove VirtualMachine %s from the copy of group %s on %s",
				s.vmKey(), group, sd.cluster)
		}
	}
	return ctrl.Result{}, nil
}

// removeMember drops the VM from the quorum group. Like ensureMember it reads
// past the cache and writes with the resourceVersion, retried on conflict, so
// that concurrent changes by other requests are never lost.
func (r *Reconciler) removeMember(ctx context.Context, s *scope) error {
	key := types.NamespacedName{Namespace: s.req.Namespace, Name: s.req.Spec.ProtectionGroupRef.Name}
	ref := s.req.Spec.VirtualMachine
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		group := &srv1alpha1.ProtectionGroup{}
		if err := r.APIReader.Get(ctx, key, group); err != nil {
			return client.IgnoreNotFound(err)
		}
		if group.Spec.ZoneRef != nil && group.Spec.ZoneRef.Name != s.zone.Name {
			return nil // another zone's group never held this VM through us
		}
		i := slices.Index(group.Spec.VirtualMachines, ref)
		if i < 0 {
			return nil
		}
		patched := group.DeepCopy()
		patched.Spec.VirtualMachines = slices.Delete(patched.Spec.VirtualMachines, i, i+1)
		return r.Client.Patch(ctx, patched, client.MergeFromWithOptions(group, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner))
	})
	if err != nil {
		return flow.Transient(ReasonRequestFailed, fmt.Errorf("removing %s/%s from ProtectionGroup %s: %w", ref.Namespace, ref.Name, key.Name, err))
	}
	return nil
}
