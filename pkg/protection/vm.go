package protection

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/pkg/reconcile"
)

// switchVM moves the VM onto its frontend PVCs. The VM's own state says how far
// it got, so a crash at any point resumes correctly:
//
//   - not swapped, not halted: set runStrategy Halted (keeping the previous strategy
//     in srv1alpha1.PreviousRunStrategyAnnotation) and wait;
//   - not swapped, halted but not Stopped: wait;
//   - not swapped, Stopped: swap the disk volumes to the frontend PVCs (DataVolume
//     volumes become PVC volumes) and record the originals in
//     OriginalVolumesAnnotation, in one patch;
//   - swapped with the previous-strategy annotation: restore the strategy;
//   - swapped, the strategy runs the VM: wait for Running and ready.
//
// This is the only place the quorum tier writes a VM, before it is protected. The
// VM carries no group label (validation refused such VMs), so no ProtectionGroup
// controller acts on it; every write uses optimistic locking against KubeVirt's.
func (r *Reconciler) switchVM(ctx context.Context, s *scope) (bool, error) {
	vm := &kubevirtv1.VirtualMachine{}
	if err := s.primary.Direct.Get(ctx, s.vmKey(), vm); err != nil {
		if apierrors.IsNotFound(err) {
			return false, reconcile.Stalled(ReasonVMNotFound, "VirtualMachine %s was deleted during protection", s.vmKey())
		}
		return false, remoteErr(s.primaryCluster, "reading VirtualMachine "+s.vmKey().String(), err)
	}
	if vm.Spec.Template == nil {
		return false, reconcile.Stalled(ReasonUnsupportedVolume, "VirtualMachine %s lost its template", s.vmKey())
	}
	patched := vm.DeepCopy()
	swapped := isSwapped(vm, s.req.Status.Volumes)
	switch {
	case !swapped && halt(patched):
		if err := r.patchVM(ctx, s, vm, patched, "stopping"); err != nil {
			return false, err
		}
		s.wait(ReasonWaitingForVM, "stopping VirtualMachine %s to switch its disks", s.vmKey())
		return false, nil
	case !swapped:
		stopped, err := r.vmStopped(ctx, s, vm)
		if err != nil {
			return false, err
		}
		if !stopped {
			s.wait(ReasonWaitingForVM, "waiting for VirtualMachine %s to stop (now %s)", s.vmKey(), printable(vm))
			return false, nil
		}
		if err := swapVolumes(patched, s.req.Status.Volumes); err != nil {
			return false, reconcile.Stalled(ReasonUnsupportedVolume, "VirtualMachine %s: %v", s.vmKey(), err)
		}
		restore(patched) // one patch: swap and start
		if err := r.patchVM(ctx, s, vm, patched, "switching disks of"); err != nil {
			return false, err
		}
		s.wait(ReasonWaitingForVM, "starting VirtualMachine %s on its DRBD frontend PVCs", s.vmKey())
		return false, nil
	case restore(patched):
		if err := r.patchVM(ctx, s, vm, patched, "starting"); err != nil {
			return false, err
		}
		s.wait(ReasonWaitingForVM, "starting VirtualMachine %s on its DRBD frontend PVCs", s.vmKey())
		return false, nil
	}
	if wantsRunning(vm) && !(vm.Status.PrintableStatus == kubevirtv1.VirtualMachineStatusRunning && vm.Status.Ready) {
		s.wait(ReasonWaitingForVM, "waiting for VirtualMachine %s to run on its DRBD frontend PVCs (now %s)", s.vmKey(), printable(vm))
		return false, nil
	}
	return true, nil
}

func (r *Reconciler) patchVM(ctx context.Context, s *scope, before, after *kubevirtv1.VirtualMachine, what string) error {
	if err := s.primary.Direct.Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return remoteErr(s.primaryCluster, what+" VirtualMachine "+s.vmKey().String(), err)
	}
	return nil
}

// vmStopped is true when KubeVirt reports the VM Stopped and its VMI is gone.
func (r *Reconciler) vmStopped(ctx context.Context, s *scope, vm *kubevirtv1.VirtualMachine) (bool, error) {
	if vm.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusStopped {
		return false, nil
	}
	err := s.primary.Direct.Get(ctx, s.vmKey(), &kubevirtv1.VirtualMachineInstance{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, remoteErr(s.primaryCluster, "reading VirtualMachineInstance "+s.vmKey().String(), err)
	}
	return false, nil
}

// isSwapped is true when every protected disk names its frontend PVC.
func isSwapped(vm *kubevirtv1.VirtualMachine, vols []srv1alpha1.ProtectedVolume) bool {
	for _, pv := range vols {
		found := false
		for _, v := range vm.Spec.Template.Spec.Volumes {
			if v.Name == pv.Disk && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pv.FrontendPVC {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// swapVolumes points every protected disk at its frontend PVC and records the
// original volumes in OriginalVolumesAnnotation.
func swapVolumes(vm *kubevirtv1.VirtualMachine, vols []srv1alpha1.ProtectedVolume) error {
	orig, err := originalVolumes(vm.Annotations)
	if err != nil {
		return err
	}
	for _, pv := range vols {
		for i := range vm.Spec.Template.Spec.Volumes {
			v := &vm.Spec.Template.Spec.Volumes[i]
			if v.Name != pv.Disk {
				continue
			}
			switch {
			case v.DataVolume != nil:
				orig[v.Name] = originalVolume{Kind: "DataVolume", Name: v.DataVolume.Name}
			case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName != pv.FrontendPVC:
				orig[v.Name] = originalVolume{Kind: "PersistentVolumeClaim", Name: v.PersistentVolumeClaim.ClaimName}
			}
			v.VolumeSource = kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1PVCSource(pv.FrontendPVC)}}
		}
	}
	raw, err := json.Marshal(orig)
	if err != nil {
		return err
	}
	setAnnotation(vm, OriginalVolumesAnnotation, string(raw))
	return nil
}

// halt stops the VM in its own API style, keeping the previous strategy, and
// reports whether anything changed. A VM that is already Halted is left alone
// (and gets no annotation, so it stays halted afterwards).
func halt(vm *kubevirtv1.VirtualMachine) bool {
	if vm.Spec.Running != nil {
		if !*vm.Spec.Running {
			return false
		}
		setAnnotation(vm, srv1alpha1.PreviousRunStrategyAnnotation, string(kubevirtv1.RunStrategyAlways))
		vm.Spec.Running = new(false)
		return true
	}
	current := kubevirtv1.RunStrategyHalted
	if vm.Spec.RunStrategy != nil {
		current = *vm.Spec.RunStrategy
	}
	if current == kubevirtv1.RunStrategyHalted {
		return false
	}
	setAnnotation(vm, srv1alpha1.PreviousRunStrategyAnnotation, string(current))
	vm.Spec.RunStrategy = new(kubevirtv1.RunStrategyHalted)
	return true
}

// restore puts back the strategy halt kept and reports whether anything changed.
func restore(vm *kubevirtv1.VirtualMachine) bool {
	prev, ok := vm.Annotations[srv1alpha1.PreviousRunStrategyAnnotation]
	if !ok {
		return false
	}
	delete(vm.Annotations, srv1alpha1.PreviousRunStrategyAnnotation)
	if vm.Spec.Running != nil {
		vm.Spec.Running = new(kubevirtv1.VirtualMachineRunStrategy(prev) != kubevirtv1.RunStrategyHalted)
		return true
	}
	vm.Spec.RunStrategy = new(kubevirtv1.VirtualMachineRunStrategy(prev))
	return true
}

// wantsRunning is true when the VM's run fields keep it running, so that the
// switch waits for Running.
func wantsRunning(vm *kubevirtv1.VirtualMachine) bool {
	if vm.Spec.Running != nil {
		return *vm.Spec.Running
	}
	if vm.Spec.RunStrategy == nil {
		return false
	}
	switch *vm.Spec.RunStrategy {
	case kubevirtv1.RunStrategyAlways, kubevirtv1.RunStrategyRerunOnFailure:
		return true
	}
	return false
}

func printable(vm *kubevirtv1.VirtualMachine) string {
	if vm.Status.PrintableStatus == "" {
		return "unknown"
	}
	return string(vm.Status.PrintableStatus)
}

func setAnnotation(vm *kubevirtv1.VirtualMachine, key, value string) {
	if vm.Annotations == nil {
		vm.Annotations = map[string]string{}
	}
	vm.Annotations[key] = value
}
