package protection

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// restoreVMs takes the VM off its DRBD frontend PVCs with moveVM, which stops it,
// removes the replication under it once it is stopped, swaps its disks and starts
// it again as it ran before:
//
//   - VM stays on the primary: its disks go back to the volumes recorded in
//     OriginalVolumesAnnotation (DataVolumes become DataVolume volumes again,
//     with their dataVolumeTemplates);
//   - VM stays on the DR cluster (forced): the primary's VM, which the failover
//     stopped, only gets its original volumes back and stays Halted; the DR VM
//     moves onto the DR backing PVCs, which hold the same data.
//
// The VMs that stay lose the group label first; the DR standby of a VM that
// goes back to the primary keeps it, so that pg-sync deletes it.
func (r *Reconciler) restoreVMs(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !reached(s.req, srv1alpha1.ProtectionSwitchingFrontend) {
		if err := r.restartUnswitched(ctx, s); err != nil { // the VM was never switched
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.releaseVM(ctx, s, s.sides()[0])
	}
	vols := s.req.Status.Volumes
	prim, dr := s.sides()[0], s.sides()[1]
	home := vmMove{sd: prim, onto: "its original PVCs", start: s.stayOn == s.primaryCluster,
		moved: func(vm *kubevirtv1.VirtualMachine) bool { return !onFrontend(vm, vols) },
		swap:  func(vm *kubevirtv1.VirtualMachine) error { return swapBack(vm, vols, true) },
	}
	moves := []vmMove{home}
	if s.stayOn == s.target {
		moves = append(moves, vmMove{sd: dr, onto: "its DR backing PVCs", start: true,
			moved: func(vm *kubevirtv1.VirtualMachine) bool { return !onFrontend(vm, vols) },
			swap:  func(vm *kubevirtv1.VirtualMachine) error { return swapBack(vm, vols, false) },
		})
	}
	// Replication goes once the VM that keeps running is stopped.
	moves[len(moves)-1].beforeSwap = r.removeReplication
	for _, m := range moves {
		if err := r.dropGroupLabel(ctx, s, m.sd); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.moveVM(ctx, s, m); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Last, once no flow writes to them again: the VMs that stay are the
	// application's own.
	for _, m := range moves {
		if err := r.releaseVM(ctx, s, m.sd); err != nil {
			return ctrl.Result{}, err
		}
	}
	setCondition(s.req, ConditionFrontendSwitched, metav1.ConditionFalse, ReasonUnprotecting, "VM %s is off its DRBD frontend PVCs", s.vmKey())
	return ctrl.Result{}, nil
}

// restartUnswitched restarts a VM that CreatingReplication stopped for DRBD to
// attach its disks, when the request goes before the VM was switched: once
// replication is gone, so that DRBD never holds a disk the VM writes to, it
// gets back the run strategy it had.
func (r *Reconciler) restartUnswitched(ctx context.Context, s *scope) error {
	sd := s.sides()[0]
	vm := &kubevirtv1.VirtualMachine{}
	if err := sd.rc.Direct.Get(ctx, s.vmKey(), vm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return remoteErr(sd.cluster, "reading VirtualMachine "+s.vmKey().String(), err)
	}
	if _, stopped := vm.Annotations[srv1alpha1.PreviousRunStrategyAnnotation]; !stopped || onFrontend(vm, s.req.Status.Volumes) {
		return nil
	}
	if err := r.removeReplication(ctx, s); err != nil {
		return err
	}
	patched := vm.DeepCopy()
	restore(patched)
	return r.patchVM(ctx, s, sd, vm, patched, "restarting")
}

// dropGroupLabel removes the group label the protect flow (or pg-sync) put on
// the VM of a side, so that no siterecovery controller takes it for a member.
func (r *Reconciler) dropGroupLabel(ctx context.Context, s *scope, sd side) error {
	if !reached(s.req, srv1alpha1.ProtectionAddingToGroup) {
		return nil
	}
	vm := &kubevirtv1.VirtualMachine{}
	switch err := sd.rc.Direct.Get(ctx, s.vmKey(), vm); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return remoteErr(sd.cluster, "reading VirtualMachine "+s.vmKey().String(), err)
	}
	if _, ok := vm.Labels[srv1alpha1.ProtectionGroupLabel]; !ok {
		return nil
	}
	vm, err := r.claimVM(ctx, s, sd, vm)
	if err != nil {
		return err
	}
	patched := vm.DeepCopy()
	delete(patched.Labels, srv1alpha1.ProtectionGroupLabel)
	// A merge patch of one label cannot lose anyone else's change.
	if err := sd.rc.Direct.Patch(ctx, patched, client.MergeFrom(vm), client.FieldOwner(FieldOwner)); err != nil {
		return remoteErr(sd.cluster, "unlabelling VirtualMachine "+s.vmKey().String(), err)
	}
	return nil
}

// onFrontend is true while any protected disk names its frontend PVC.
func onFrontend(vm *kubevirtv1.VirtualMachine, vols []srv1alpha1.ProtectedVolume) bool {
	for _, pv := range vols {
		for _, v := range vm.Spec.Template.Spec.Volumes {
			if v.Name == pv.Disk && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pv.FrontendPVC {
				return true
			}
		}
	}
	return false
}

// swapBack points every disk that names its frontend PVC at its original volume
// (original), with the dataVolumeTemplates the switch dropped, or at its DR
// backing PVC, and drops OriginalVolumesAnnotation. A disk the annotation does
// not know goes back to the source PVC recorded in the request, which is the
// PVC it had.
func swapBack(vm *kubevirtv1.VirtualMachine, vols []srv1alpha1.ProtectedVolume, original bool) error {
	orig, err := originalVolumes(vm.Annotations)
	if err != nil {
		orig = map[string]originalVolume{} // the request's status knows the PVCs
	}
	for _, pv := range vols {
		for i := range vm.Spec.Template.Spec.Volumes {
			v := &vm.Spec.Template.Spec.Volumes[i]
			if v.Name != pv.Disk || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != pv.FrontendPVC {
				continue
			}
			o, known := orig[v.Name]
			switch {
			case !original:
				v.VolumeSource = pvcVolumeSource(pv.TargetPVC)
			case known && o.Kind == "DataVolume":
				v.VolumeSource = kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: o.Name}}
			case known && o.Name != "":
				v.VolumeSource = pvcVolumeSource(o.Name)
			default:
				v.VolumeSource = pvcVolumeSource(pv.SourcePVC)
			}
		}
	}
	delete(vm.Annotations, OriginalVolumesAnnotation)
	if original {
		restoreTemplates(vm)
	}
	delete(vm.Annotations, OriginalDataVolumeTemplatesAnnotation)
	return nil
}

func pvcVolumeSource(claim string) kubevirtv1.VolumeSource {
	return kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1PVCSource(claim)}}
}
