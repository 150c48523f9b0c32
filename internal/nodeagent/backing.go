package nodeagent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// requestLabels are the labels that tie a backing or metadata PVC to the
// protection request of a DRBDResource. The protection flow puts them on the
// claims it creates (the DR backing and the metadata PVCs) and on the VM's own
// source PVCs while they are in a group; the agent opens no other claim.
var requestLabels = []string{srv1alpha1.DRNamespaceLabel, srv1alpha1.ProtectionRequestLabel}

// backingClaim reads the PVC ref names in obj's namespace and checks that the
// agent may hand its device to DRBD: a bound, block-mode claim of the same
// protection request as obj. The spec names a claim, never a device, so a
// DRBDResource cannot make the agent open, wipe (create-md --force) or stream
// any other block device of the node. A claim that is missing or not bound yet
// wraps ErrDeviceMissing; any other refusal is a *refusal.
func (r *Reconciler) backingClaim(ctx context.Context, obj *srv1alpha1.DRBDResource, ref *srv1alpha1.LocalObjectReference) (*corev1.PersistentVolumeClaim, error) {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}
	for _, l := range requestLabels {
		if obj.Labels[l] == "" {
			return nil, &refusal{fmt.Sprintf("DRBDResource %s has no %s label: the agent uses only PVCs of the protection request that created the resource",
				obj.Name, l)}
		}
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.PVCs.Get(ctx, key, pvc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: PVC %s not found", ErrDeviceMissing, key)
		}
		return nil, err
	}
	for _, l := range requestLabels {
		if got, want := pvc.Labels[l], obj.Labels[l]; got != want {
			return nil, &refusal{fmt.Sprintf("PVC %s is not a claim of this DRBDResource's protection request: its label %s is %q, the DRBDResource's %q",
				key, l, got, want)}
		}
	}
	if pvc.Spec.VolumeMode == nil || *pvc.Spec.VolumeMode != corev1.PersistentVolumeBlock {
		return nil, &refusal{fmt.Sprintf("PVC %s is not in Block volume mode: DRBD replicates raw block claims only", key)}
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return nil, fmt.Errorf("%w: PVC %s is not bound to a PersistentVolume yet", ErrDeviceMissing, key)
	}
	return pvc, nil
}

// refusal is a backing claim the agent will not use; its message says why.
type refusal struct{ msg string }

func (e *refusal) Error() string { return e.msg }
