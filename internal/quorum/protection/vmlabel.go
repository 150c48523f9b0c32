package protection

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// claimVM makes sure the VM of a side carries the request's DR namespace
// label (srv1alpha1.DRNamespaceLabel) and returns the VM as it is now. The
// workload chart's guard lets a quorum identity change or delete only what
// carries its own DR namespace's label, and lets it add that label to an
// unlabelled VM only in a patch that changes nothing else: so the label goes
// first, alone, and every other write to the VM follows it.
func (r *Reconciler) claimVM(ctx context.Context, s *scope, sd side, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	if vm.Labels[srv1alpha1.DRNamespaceLabel] == s.req.Namespace {
		return vm, nil
	}
	claimed := vm.DeepCopy()
	setDRNamespaceLabel(claimed, s.req.Namespace)
	if err := sd.rc.Direct.Patch(ctx, claimed, client.MergeFromWithOptions(vm, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); err != nil {
		return nil, remoteErr(sd.cluster, "labelling VirtualMachine "+s.vmKey().String()+" with its DR namespace", err)
	}
	return claimed, nil
}

// releaseVM removes the request's DR namespace label from the VM of a side
// once protection is removed: the VM is the application's own again, out of
// the quorum identity's reach.
func (r *Reconciler) releaseVM(ctx context.Context, s *scope, sd side) error {
	vm := &kubevirtv1.VirtualMachine{}
	if err := sd.rc.Direct.Get(ctx, s.vmKey(), vm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return remoteErr(sd.cluster, "reading VirtualMachine "+s.vmKey().String(), err)
	}
	if vm.Labels[srv1alpha1.DRNamespaceLabel] != s.req.Namespace {
		return nil
	}
	patched := vm.DeepCopy()
	delete(patched.Labels, srv1alpha1.DRNamespaceLabel)
	// A merge patch of one label cannot lose anyone else's change.
	if err := sd.rc.Direct.Patch(ctx, patched, client.MergeFrom(vm), client.FieldOwner(FieldOwner)); client.IgnoreNotFound(err) != nil {
		return remoteErr(sd.cluster, "unlabelling VirtualMachine "+s.vmKey().String(), err)
	}
	return nil
}

func setDRNamespaceLabel(vm *kubevirtv1.VirtualMachine, drNamespace string) {
	if vm.Labels == nil {
		vm.Labels = map[string]string{}
	}
	vm.Labels[srv1alpha1.DRNamespaceLabel] = drNamespace
}
