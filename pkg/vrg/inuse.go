package vrg

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ramenv1alpha1 "github.com/siterecovery/siterecovery/apis/ramendr/v1alpha1"
)

// readyForSecondary is isPVCReadyForSecondary of spec 000 §4.4 for every PVC of the
// VRG: Failover needs each PVC unused; Relocate needs it deleted and unused. It
// returns the PVCs that are not ready, with why.
func (r *Reconciler) readyForSecondary(ctx context.Context, s *scope) ([]string, error) {
	var notReady []string
	for _, p := range s.pvcs {
		name := p.pvc.Namespace + "/" + p.pvc.Name
		if s.vrg.Spec.Action == ramenv1alpha1.ActionRelocate && p.pvc.DeletionTimestamp.IsZero() {
			notReady = append(notReady, name+" (not deleted)")
			continue
		}
		user, err := r.pvcUser(ctx, p.pvc)
		if err != nil {
			return nil, err
		}
		if user != "" {
			notReady = append(notReady, name+" (used by "+user+")")
		}
	}
	return notReady, nil
}

// pvcUser names a pod or VirtualMachineInstance that still mounts the PVC, or "".
// A virt-launcher pod mounts the PVCs of its VMI; the VMI is checked as well since
// it holds the PVCs before its pod exists and after it is gone.
func (r *Reconciler) pvcUser(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, error) {
	key := pvc.Namespace + "/" + pvc.Name
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(pvc.Namespace), client.MatchingFields{claimIndex: key}); err != nil {
		return "", fmt.Errorf("listing pods of PVC %s: %w", key, err)
	}
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			return "pod " + pod.Name, nil
		}
	}
	vmis := &kubevirtv1.VirtualMachineInstanceList{}
	if err := r.Client.List(ctx, vmis, client.InNamespace(pvc.Namespace), client.MatchingFields{claimIndex: key}); err != nil {
		return "", fmt.Errorf("listing VirtualMachineInstances of PVC %s: %w", key, err)
	}
	for _, vmi := range vmis.Items {
		if !vmi.IsFinal() {
			return "VirtualMachineInstance " + vmi.Name, nil
		}
	}
	return "", nil
}
