package vrg

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// readyForSecondary checks that every PVC of the VRG may go secondary.
// Failover needs each PVC unused; Relocate needs it deleted and unused. It
// returns the PVCs that are not ready, with why.
//
// Ramen's Relocate sees the application removed from the source with its PVCs.
// Here an application is moved by stopping its ProtectionGroup: its
// VMs stay, Halted, and keep their PVCs for the way back. So for a VRG of a
// group, the group's copy on this cluster having stopped stands for "deployment
// and PVC deleted"; a VRG without a group keeps the spec's rule.
func (r *Reconciler) readyForSecondary(ctx context.Context, s *scope) ([]string, error) {
	relocate := s.vrg.Spec.Action == drv1alpha1.ActionRelocate
	removed := false
	if relocate {
		var err error
		if removed, err = r.applicationStopped(ctx, s.vrg); err != nil {
			return nil, err
		}
	}
	var notReady []string
	for _, p := range s.pvcs {
		name := p.pvc.Namespace + "/" + p.pvc.Name
		if relocate && !removed && p.pvc.DeletionTimestamp.IsZero() {
			notReady = append(notReady, name+" (not deleted, and its application has not stopped here)")
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

// applicationStopped reports whether the VRG's ProtectionGroup has a copy on
// this cluster that was asked to stop, observed that and reports stopped.
func (r *Reconciler) applicationStopped(ctx context.Context, vrg *drv1alpha1.VolumeReplicationGroup) (bool, error) {
	if vrg.Spec.ProtectionGroupRef == "" {
		return false, nil
	}
	groups := &srv1alpha1.ProtectionGroupList{}
	if err := r.Client.List(ctx, groups, client.MatchingFields{groupNameIndex: vrg.Spec.ProtectionGroupRef}); err != nil {
		return false, fmt.Errorf("listing ProtectionGroup %s: %w", vrg.Spec.ProtectionGroupRef, err)
	}
	for _, g := range groups.Items {
		if g.Spec.DesiredState != srv1alpha1.StateStopped || g.Status.ObservedGeneration != g.Generation ||
			g.Status.CurrentState != srv1alpha1.StateStopped {
			return false, nil
		}
	}
	return len(groups.Items) > 0, nil
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
