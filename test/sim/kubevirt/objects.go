package kubevirt

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SimulatedNodeName is the status.nodeName of every simulated VMI.
const SimulatedNodeName = "kubevirt-simulator"

// createVMI creates the VM's VMI, running and ready, controlled by the VM.
func (r *reconciler) createVMI(ctx context.Context, vm *kubevirtv1.VirtualMachine) error {
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{
			Name:            vm.Name,
			Namespace:       vm.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vm, kubevirtv1.VirtualMachineGroupVersionKind)},
		},
	}
	if t := vm.Spec.Template; t != nil {
		vmi.Labels = maps.Clone(t.ObjectMeta.Labels)
		vmi.Annotations = maps.Clone(t.ObjectMeta.Annotations)
		t.Spec.DeepCopyInto(&vmi.Spec)
	}
	now := metav1.NewTime(r.now())
	status := kubevirtv1.VirtualMachineInstanceStatus{
		Phase:    kubevirtv1.Running,
		NodeName: r.opts.NodeName,
		Conditions: []kubevirtv1.VirtualMachineInstanceCondition{{
			Type:               kubevirtv1.VirtualMachineInstanceReady,
			Status:             corev1.ConditionTrue,
			LastTransitionTime: now,
		}},
		PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{{
			Phase:                    kubevirtv1.Running,
			PhaseTransitionTimestamp: now,
		}},
	}
	if r.opts.LauncherPods {
		// The VMI waits for its launcher pod (launcher.go).
		status = kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Pending}
	}
	vmi.Status = *status.DeepCopy()
	if err := r.client.Create(ctx, vmi); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create VirtualMachineInstance %s/%s: %w", vm.Namespace, vm.Name, err)
		}
		// Created by an earlier pass that may not have opened its disks.
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
			return err
		}
		if r.opts.LauncherPods {
			return nil
		}
		return r.openDisks(ctx, vmi)
	}
	if r.opts.LauncherPods {
		if vmi.Status.Phase == "" {
			return r.setVMIStatus(ctx, vmi, func(s *kubevirtv1.VirtualMachineInstanceStatus) { *s = status })
		}
		return nil
	}
	if err := r.openDisks(ctx, vmi); err != nil {
		return err
	}
	// KubeVirt's VMI CRD has no status subresource, so the status above was stored with
	// the object. Should a CRD with a status subresource be installed, write it separately.
	if vmi.Status.Phase == "" {
		vmi.Status = status
		if err := r.client.Status().Update(ctx, vmi); err != nil {
			return fmt.Errorf("set status of VirtualMachineInstance %s/%s: %w", vm.Namespace, vm.Name, err)
		}
	}
	return nil
}

// patchAnnotations sets (non-nil) or removes (nil) annotations on the VM with a merge
// patch, skipping the request when nothing changes. vm is updated from the answer.
func (r *reconciler) patchAnnotations(ctx context.Context, vm *kubevirtv1.VirtualMachine, set map[string]*string) error {
	changed := false
	patch := map[string]any{}
	for k, v := range set {
		cur, ok := vm.Annotations[k]
		switch {
		case v == nil && ok:
			patch[k] = nil
			changed = true
		case v != nil && (!ok || cur != *v):
			patch[k] = *v
			changed = true
		}
	}
	if !changed {
		return nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
	if err != nil {
		return err
	}
	if err := r.client.Patch(ctx, vm, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("annotate VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	r.wrote(vm)
	return nil
}

// patchStatus applies mutate to a copy of the VM status and patches the status
// subresource if anything changed. vm is updated from the answer.
func (r *reconciler) patchStatus(ctx context.Context, vm *kubevirtv1.VirtualMachine, mutate func(*kubevirtv1.VirtualMachineStatus)) error {
	updated := vm.DeepCopy()
	mutate(&updated.Status)
	if equality.Semantic.DeepEqual(vm.Status, updated.Status) {
		return nil
	}
	if err := r.client.Status().Patch(ctx, updated, client.MergeFrom(vm)); err != nil {
		return fmt.Errorf("update status of VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	*vm = *updated
	r.wrote(vm)
	return nil
}

// setCondition sets c on s, keeping LastTransitionTime when the status does not change.
func setCondition(s *kubevirtv1.VirtualMachineStatus, now time.Time, c kubevirtv1.VirtualMachineCondition) {
	for i := range s.Conditions {
		old := &s.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			return
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		*old = c
		return
	}
	c.LastTransitionTime = metav1.NewTime(now)
	s.Conditions = append(s.Conditions, c)
}

// setReady sets the VM's Ready condition (KubeVirt copies it from the VMI).
func setReady(s *kubevirtv1.VirtualMachineStatus, now time.Time, ready bool, reason, message string) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	setCondition(s, now, kubevirtv1.VirtualMachineCondition{
		Type: kubevirtv1.VirtualMachineReady, Status: status, Reason: reason, Message: message,
	})
}

// clearInvalidRunStrategy removes the Failure condition the simulator set for a VM with
// both spec.running and spec.runStrategy.
func clearInvalidRunStrategy(s *kubevirtv1.VirtualMachineStatus) {
	kept := s.Conditions[:0]
	for _, c := range s.Conditions {
		if c.Type == kubevirtv1.VirtualMachineFailure && c.Reason == ReasonInvalidRunStrategy {
			continue
		}
		kept = append(kept, c)
	}
	s.Conditions = kept
}

// openDisks has the VMI's qemu open its disks (Options.Disks). A disk that
// cannot be opened fails the start: the VMI goes again, and the VM is retried.
func (r *reconciler) openDisks(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	if r.opts.Disks == nil {
		return nil
	}
	if err := r.opts.Disks.Open(ctx, vmi); err != nil {
		if derr := r.client.Delete(ctx, vmi); derr != nil && !apierrors.IsNotFound(derr) {
			return fmt.Errorf("%w; deleting the VMI that could not start: %w", err, derr)
		}
		return err
	}
	return nil
}
