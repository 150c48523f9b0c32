package admission

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/vmdisks"
)

// protectionRequests validates ProtectionRequests against the quorum copy and
// the zone's primary cluster. When the primary cannot be reached the request is
// admitted with a warning: the controller checks again before it touches
// anything, and an outage of one site must not block protecting elsewhere.
type protectionRequests struct {
	client client.Reader
	remote remote.ClusterCache
}

var _ admission.Validator[*srv1alpha1.ProtectionRequest] = &protectionRequests{}

// ValidateCreate refuses a request the protection flow would fail.
func (v *protectionRequests) ValidateCreate(ctx context.Context, pr *srv1alpha1.ProtectionRequest) (admission.Warnings, error) {
	z := &srv1alpha1.ProtectionZone{}
	if err := v.client.Get(ctx, client.ObjectKey{Namespace: pr.Namespace, Name: pr.Spec.ZoneRef.Name}, z); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("ProtectionZone %q does not exist in namespace %s; fix spec.zoneRef", pr.Spec.ZoneRef.Name, pr.Namespace)
		}
		return nil, err
	}
	if z.Spec.StorageBackend != srv1alpha1.BackendDRBD {
		return nil, fmt.Errorf("ProtectionZone %s uses storageBackend %s; ProtectionRequests protect VMs on DRBD zones only: protect %s workloads with a DRPlacementControl", z.Name, z.Spec.StorageBackend, z.Spec.StorageBackend)
	}
	if err := v.notHandledElsewhere(ctx, pr); err != nil {
		return nil, err
	}
	primary := primaryOf(z)
	rc, err := v.remote.Get(remote.Key{Namespace: pr.Namespace, Zone: z.Name, Cluster: primary})
	if err != nil {
		// Not a refusal: the controller checks again before it touches anything.
		return admission.Warnings{fmt.Sprintf("primary cluster %s cannot be reached now (%s), so the VM and its disks were not checked; the request checks them before it starts", primary, err)}, nil
	}
	if err := checkVM(ctx, rc.Direct, z, primary, pr.Spec.VirtualMachine); err != nil {
		var unreachable remoteError
		if errors.As(err, &unreachable) {
			return admission.Warnings{err.Error()}, nil
		}
		return nil, err
	}
	return nil, nil
}

func (v *protectionRequests) notHandledElsewhere(ctx context.Context, pr *srv1alpha1.ProtectionRequest) error {
	list := &srv1alpha1.ProtectionRequestList{}
	if err := v.client.List(ctx, list, client.InNamespace(pr.Namespace)); err != nil {
		return err
	}
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name != pr.Name && o.Spec.VirtualMachine == pr.Spec.VirtualMachine && o.Status.Phase != srv1alpha1.ProtectionFailed {
			return fmt.Errorf("VirtualMachine %s/%s is already protected by ProtectionRequest %s (phase %s); a VM has one request",
				pr.Spec.VirtualMachine.Namespace, pr.Spec.VirtualMachine.Name, o.Name, phaseOrPending(o.Status.Phase))
		}
	}
	return nil
}

// remoteError is a failure to read the primary, not a fault of the request.
type remoteError struct{ error }

// checkVM refuses a VM that is missing or already grouped, and a VM whose
// disks the protection flow would refuse, with the flow's own messages.
func checkVM(ctx context.Context, c client.Reader, z *srv1alpha1.ProtectionZone, primary string, ref srv1alpha1.VirtualMachineReference) error {
	vm := &kubevirtv1.VirtualMachine{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, vm); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("VirtualMachine %s/%s does not exist on the zone's primary cluster %s; protect a VM that runs there", ref.Namespace, ref.Name, primary)
		}
		return remoteError{fmt.Errorf("reading VirtualMachine %s/%s on %s failed, so it was not checked: %w", ref.Namespace, ref.Name, primary, err)}
	}
	if g := vm.Labels[srv1alpha1.ProtectionGroupLabel]; g != "" {
		return fmt.Errorf("VirtualMachine %s/%s is already in ProtectionGroup %s", ref.Namespace, ref.Name, g)
	}
	disks, err := vmdisks.Disks(vm)
	if err != nil {
		return err
	}
	for _, d := range disks {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: d.Claim}, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				return vmdisks.ClaimNotFound(d, ref.Namespace, primary)
			}
			return remoteError{fmt.Errorf("reading PVC %s/%s on %s failed, so it was not checked: %w", ref.Namespace, d.Claim, primary, err)}
		}
		if err := vmdisks.CheckClaim(d, pvc, z); err != nil {
			return err
		}
	}
	return nil
}

// ValidateUpdate accepts every update.
func (v *protectionRequests) ValidateUpdate(context.Context, *srv1alpha1.ProtectionRequest, *srv1alpha1.ProtectionRequest) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete accepts every deletion: deleting a request unprotects its VM,
// and the unprotect flow holds with a condition where it must.
func (v *protectionRequests) ValidateDelete(context.Context, *srv1alpha1.ProtectionRequest) (admission.Warnings, error) {
	return nil, nil
}
