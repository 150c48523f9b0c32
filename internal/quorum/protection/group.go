package protection

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// addToGroup adds the VM to the quorum ProtectionGroup (creating the group when
// missing) and labels the VM with the group.
func (r *Reconciler) addToGroup(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.ensureMember(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	vm := &kubevirtv1.VirtualMachine{}
	if err := s.primary.Direct.Get(ctx, s.vmKey(), vm); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, flow.Stalled(ReasonVMNotFound, "VirtualMachine %s was deleted during protection", s.vmKey())
		}
		return ctrl.Result{}, remoteErr(s.primaryCluster, "reading VirtualMachine "+s.vmKey().String(), err)
	}
	vm, err := r.claimVM(ctx, s, s.sides()[0], vm)
	if err != nil {
		return ctrl.Result{}, err
	}
	group := s.req.Spec.ProtectionGroupRef.Name
	if vm.Labels[srv1alpha1.ProtectionGroupLabel] != group {
		patched := vm.DeepCopy()
		if patched.Labels == nil {
			patched.Labels = map[string]string{}
		}
		patched.Labels[srv1alpha1.ProtectionGroupLabel] = group
		// A merge patch of one label cannot lose anyone else's change.
		if err := s.primary.Direct.Patch(ctx, patched, client.MergeFrom(vm)); err != nil {
			return ctrl.Result{}, remoteErr(s.primaryCluster, "labelling VirtualMachine "+s.vmKey().String(), err)
		}
	}
	return r.advance(ctx, s, srv1alpha1.ProtectionProtected)
}

// ensureMember appends the VM to spec.virtualMachines of the quorum group. Reads
// bypass the cache and writes carry the resourceVersion, retried on conflict, so
// concurrent additions by other requests are never lost.
func (r *Reconciler) ensureMember(ctx context.Context, s *scope) error {
	key := types.NamespacedName{Namespace: s.req.Namespace, Name: s.req.Spec.ProtectionGroupRef.Name}
	ref := s.req.Spec.VirtualMachine
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		group := &srv1alpha1.ProtectionGroup{}
		err := r.APIReader.Get(ctx, key, group)
		if apierrors.IsNotFound(err) {
			protocol := s.req.Spec.Protocol
			if protocol == "" {
				protocol = srv1alpha1.ProtocolA
			}
			group = &srv1alpha1.ProtectionGroup{
				ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
					Labels: map[string]string{srv1alpha1.ZoneLabel: s.zone.Name}},
				Spec: srv1alpha1.ProtectionGroupSpec{
					VirtualMachines: []srv1alpha1.VirtualMachineReference{ref},
					ActiveCluster:   s.primaryCluster,
					ZoneRef:         &srv1alpha1.LocalObjectReference{Name: s.zone.Name},
					Replication:     srv1alpha1.ReplicationSettings{Protocol: protocol},
				},
			}
			err = r.Client.Create(ctx, group)
			if apierrors.IsAlreadyExists(err) {
				// Someone created it meanwhile: retry as an update.
				return apierrors.NewConflict(srv1alpha1.GroupVersion.WithResource("protectiongroups").GroupResource(), key.Name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		if group.Spec.ZoneRef != nil && group.Spec.ZoneRef.Name != s.zone.Name {
			return flow.Stalled(ReasonGroupConflict, "ProtectionGroup %s belongs to zone %s, not %s; name another group", key.Name, group.Spec.ZoneRef.Name, s.zone.Name)
		}
		for _, vm := range group.Spec.VirtualMachines {
			if vm == ref {
				return nil
			}
		}
		patched := group.DeepCopy()
		patched.Spec.VirtualMachines = append(patched.Spec.VirtualMachines, ref)
		if patched.Spec.ZoneRef == nil {
			patched.Spec.ZoneRef = &srv1alpha1.LocalObjectReference{Name: s.zone.Name}
		}
		if patched.Spec.ActiveCluster == "" {
			patched.Spec.ActiveCluster = s.primaryCluster
		}
		return r.Client.Patch(ctx, patched, client.MergeFromWithOptions(group, client.MergeFromWithOptimisticLock{}))
	})
	var stalled *flow.Error
	switch {
	case err == nil:
		return nil
	case asReconcileError(err, &stalled):
		return stalled
	default:
		return flow.Transient(ReasonRequestFailed, fmt.Errorf("adding %s/%s to ProtectionGroup %s: %w", ref.Namespace, ref.Name, key.Name, err))
	}
}
