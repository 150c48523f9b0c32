package protection

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/vmdisks"
)

// validate checks everything the flow relies on and records the disks to
// replicate in status.volumes. Anything the user must fix fails the request.
func (r *Reconciler) validate(ctx context.Context, s *scope) (ctrl.Result, error) {
	ref := s.req.Spec.ProtectionGroupRef
	if ref.Namespace != "" && ref.Namespace != s.req.Namespace {
		return ctrl.Result{}, flow.Stalled(ReasonInvalidSpec, "spec.protectionGroupRef.namespace %q must be empty or %q: a DR namespace only drives its own groups", ref.Namespace, s.req.Namespace)
	}
	if err := r.checkNamespaceAllowed(s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.checkNamespaceListed(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	vm := &kubevirtv1.VirtualMachine{}
	if err := s.primary.Direct.Get(ctx, s.vmKey(), vm); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, flow.Stalled(ReasonVMNotFound, "VirtualMachine %s not found on primary cluster %s", s.vmKey(), s.primaryCluster)
		}
		return ctrl.Result{}, remoteErr(s.primaryCluster, "reading VirtualMachine "+s.vmKey().String(), err)
	}
	if g := vm.Labels[srv1alpha1.ProtectionGroupLabel]; g != "" {
		return ctrl.Result{}, flow.Stalled(ReasonAlreadyProtected, "VirtualMachine %s is already in ProtectionGroup %s (label %s)", s.vmKey(), g, srv1alpha1.ProtectionGroupLabel)
	}
	if err := r.checkNoOtherRequest(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	volumes, err := r.validateDisks(ctx, s, vm)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.req.Status.Volumes = volumes
	s.req.Status.DRBDResourceName = srv1alpha1.DRBDResourceName(vm.Name)
	setCondition(s.req, srv1alpha1.ConditionValidated, metav1.ConditionTrue, srv1alpha1.ReasonReconciled,
		"%d disk(s) can be replicated from %s to %s", len(volumes), s.primaryCluster, s.target)
	return r.advance(ctx, s, srv1alpha1.ProtectionProvisioningTarget)
}

// checkNoOtherRequest fails the request when another non-Failed request of this
// DR namespace names the same VM and came first (older, or same age and smaller
// name), or is already past validation.
func (r *Reconciler) checkNoOtherRequest(ctx context.Context, s *scope) error {
	list := &srv1alpha1.ProtectionRequestList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(s.req.Namespace)); err != nil {
		return flow.Transient(ReasonRequestFailed, fmt.Errorf("listing ProtectionRequests: %w", err))
	}
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID == s.req.UID || o.Spec.VirtualMachine != s.req.Spec.VirtualMachine || o.Status.Phase == srv1alpha1.ProtectionFailed {
			continue
		}
		pastValidation := o.Status.Phase != "" && o.Status.Phase != srv1alpha1.ProtectionPending && o.Status.Phase != srv1alpha1.ProtectionValidating
		if pastValidation || earlier(o, s.req) {
			return flow.Stalled(ReasonAlreadyProtected, "VirtualMachine %s is already handled by ProtectionRequest %s (phase %s)",
				s.vmKey(), o.Name, phaseOrPending(o.Status.Phase))
		}
	}
	return nil
}

func earlier(a, b *srv1alpha1.ProtectionRequest) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

func phaseOrPending(p srv1alpha1.ProtectionPhase) srv1alpha1.ProtectionPhase {
	if p == "" {
		return srv1alpha1.ProtectionPending
	}
	return p
}

// validateDisks resolves every data volume of the VM to a Bound, Block PVC with
// a storage mapping, in the order of the VM's volumes (the DRBD volume numbers).
func (r *Reconciler) validateDisks(ctx context.Context, s *scope, vm *kubevirtv1.VirtualMachine) ([]srv1alpha1.ProtectedVolume, error) {
	disks, err := vmdisks.Disks(vm)
	if err != nil {
		return nil, stalled(err)
	}
	out := make([]srv1alpha1.ProtectedVolume, 0, len(disks))
	for _, d := range disks {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := s.primary.Direct.Get(ctx, types.NamespacedName{Namespace: vm.Namespace, Name: d.Claim}, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, stalled(vmdisks.ClaimNotFound(d, vm.Namespace, s.primaryCluster))
			}
			return nil, remoteErr(s.primaryCluster, "reading PVC "+d.Claim, err)
		}
		if err := vmdisks.CheckClaim(d, pvc, s.zone); err != nil {
			return nil, stalled(err)
		}
		size := pvc.Status.Capacity[corev1.ResourceStorage]
		if size.IsZero() {
			size = pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		}
		out = append(out, srv1alpha1.ProtectedVolume{
			Disk: d.Name, Volume: int32(len(out)), SourcePVC: d.Claim, TargetPVC: d.Claim,
			FrontendPVC: FrontendPVCName(d.Claim), MetaPVC: MetaPVCName(d.Claim), SizeBytes: size.Value(),
		})
	}
	return out, nil
}

// stalled fails the request with a disk Problem's reason and message.
func stalled(err error) error {
	var p *vmdisks.Problem
	if errors.As(err, &p) {
		return flow.Stalled(p.Reason, "%s", p.Message)
	}
	return err
}
