package protection

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// switchVM moves the VM onto its frontend PVCs (see moveVM). This is the only
// place the protect flow writes a VM, before it is protected. The VM carries no
// group label (validation refused such VMs), so no ProtectionGroup controller
// acts on it.
func (r *Reconciler) switchVM(ctx context.Context, s *scope) error {
	vols := s.req.Status.Volumes
	return r.moveVM(ctx, s, vmMove{
		sd: s.sides()[0], onto: "its DRBD frontend PVCs", start: true,
		moved:      func(vm *kubevirtv1.VirtualMachine) bool { return isSwapped(vm, vols) },
		swap:       func(vm *kubevirtv1.VirtualMachine) error { return swapVolumes(vm, vols) },
		beforeSwap: r.primaryReplicaServes,
		missing:    flow.Stalled(ReasonVMNotFound, "VirtualMachine %s was deleted during protection", s.vmKey()),
	})
}

// primaryReplicaServes holds the VM's start until its DRBD replica on the
// primary is Primary with UpToDate data: the VM opens /dev/drbd<minor> as it
// starts, and a Secondary would refuse it.
func (r *Reconciler) primaryReplicaServes(ctx context.Context, s *scope) error {
	sd := s.sides()[0]
	d := &srv1alpha1.DRBDResource{}
	if err := sd.rc.Direct.Get(ctx, types.NamespacedName{Namespace: s.vmNamespace(), Name: s.req.Status.DRBDResourceName}, d); err != nil {
		return remoteErr(sd.cluster, "reading DRBDResource "+s.req.Status.DRBDResourceName, err)
	}
	if ok, state := servesData(d); !ok {
		return flow.Waiting(ReasonWaitingForAgent, 0, "waiting for DRBDResource %s on node %s of %s to be Primary with UpToDate data before VirtualMachine %s starts on it (now %s)",
			d.Name, d.Spec.NodeName, sd.cluster, s.vmKey(), state)
	}
	return nil
}

// servesData reports whether a replica is Primary with every volume UpToDate,
// and its state in words.
func servesData(d *srv1alpha1.DRBDResource) (bool, string) {
	role := d.Status.Role
	if role == "" {
		role = "no role reported"
	}
	ok := d.Status.Role == string(srv1alpha1.RolePrimary) && len(d.Status.Volumes) == len(d.Spec.Volumes)
	state := role
	for _, v := range d.Status.Volumes {
		state += fmt.Sprintf(", volume %d %s", v.Number, v.DiskState)
		ok = ok && v.DiskState == diskUpToDate
	}
	return ok, state
}

// vmMove is one move of the VM on one cluster from one set of disk claims to
// another, which KubeVirt only allows while the VM is stopped.
type vmMove struct {
	sd side
	// onto names the destination in messages ("its original PVCs").
	onto string
	// moved reports whether the VM's disks already name the destination.
	moved func(*kubevirtv1.VirtualMachine) bool
	// swap points the disks at the destination.
	swap func(*kubevirtv1.VirtualMachine) error
	// beforeSwap runs once the VM is stopped and before the swap; the swap waits
	// until it returns nil (a Waiting error holds it).
	beforeSwap func(ctx context.Context, s *scope) error
	// start stops the VM for the move and restores its run strategy after it.
	// Without it the VM is never stopped nor started here: the move waits until
	// it is stopped and leaves it Halted.
	start bool
	// missing is the error when the VM does not exist; nil means nothing to move.
	missing error
}

// moveVM moves a VM as m says. The VM's own state says how far it got, so a
// crash at any point resumes correctly:
//
//   - not moved, not halted: set runStrategy Halted (keeping the previous strategy
//     in srv1alpha1.PreviousRunStrategyAnnotation) and wait;
//   - not moved, halted but not Stopped: wait;
//   - not moved, Stopped: run beforeSwap, then swap the disk volumes and restore
//     the strategy in one patch;
//   - moved with the previous-strategy annotation: restore the strategy;
//   - moved, the strategy runs the VM: wait for Running and ready.
//
// Every write uses optimistic locking against KubeVirt's.
func (r *Reconciler) moveVM(ctx context.Context, s *scope, m vmMove) error {
	vm := &kubevirtv1.VirtualMachine{}
	if err := m.sd.rc.Direct.Get(ctx, s.vmKey(), vm); err != nil {
		if apierrors.IsNotFound(err) {
			return m.missing
		}
		return remoteErr(m.sd.cluster, "reading VirtualMachine "+s.vmKey().String(), err)
	}
	if vm.Spec.Template == nil {
		return flow.Stalled(ReasonUnsupportedVolume, "VirtualMachine %s on %s lost its template", s.vmKey(), m.sd.cluster)
	}
	patched := vm.DeepCopy()
	moved := m.moved(vm)
	switch {
	case !moved && m.start && halt(patched):
		if err := r.patchVM(ctx, s, m.sd, vm, patched, "stopping"); err != nil {
			return err
		}
		return flow.Waiting(ReasonWaitingForVM, 0, "stopping VirtualMachine %s on %s to move it onto %s", s.vmKey(), m.sd.cluster, m.onto)
	case !moved:
		stopped, err := r.vmStopped(ctx, s, m.sd, vm)
		if err != nil {
			return err
		}
		if !stopped {
			hint := ""
			if !m.start {
				hint = "; it is neither stopped nor started here: stop it to go on"
			}
			return flow.Waiting(ReasonWaitingForVM, 0, "waiting for VirtualMachine %s on %s to stop before moving it onto %s (now %s)%s", s.vmKey(), m.sd.cluster, m.onto, printable(vm), hint)
		}
		if m.beforeSwap != nil {
			if err := m.beforeSwap(ctx, s); err != nil {
				return err
			}
		}
		if err := m.swap(patched); err != nil {
			return flow.Stalled(ReasonUnsupportedVolume, "VirtualMachine %s on %s: %w", s.vmKey(), m.sd.cluster, err)
		}
		if m.start {
			restore(patched) // one patch: swap and start
		} else {
			delete(patched.Annotations, srv1alpha1.PreviousRunStrategyAnnotation) // stays Halted
		}
		if err := r.patchVM(ctx, s, m.sd, vm, patched, "switching disks of"); err != nil {
			return err
		}
		if !m.start {
			return nil
		}
		return flow.Waiting(ReasonWaitingForVM, 0, "starting VirtualMachine %s on %s on %s", s.vmKey(), m.sd.cluster, m.onto)
	case m.start && restore(patched):
		if err := r.patchVM(ctx, s, m.sd, vm, patched, "starting"); err != nil {
			return err
		}
		return flow.Waiting(ReasonWaitingForVM, 0, "starting VirtualMachine %s on %s on %s", s.vmKey(), m.sd.cluster, m.onto)
	}
	if m.start && wantsRunning(vm) && (vm.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusRunning || !vm.Status.Ready) {
		return flow.Waiting(ReasonWaitingForVM, 0, "waiting for VirtualMachine %s to run on %s on %s (now %s)", s.vmKey(), m.sd.cluster, m.onto, printable(vm))
	}
	return nil
}

func (r *Reconciler) patchVM(ctx context.Context, s *scope, sd side, before, after *kubevirtv1.VirtualMachine, what string) error {
	claimed, err := r.claimVM(ctx, s, sd, before)
	if err != nil {
		return err
	}
	if claimed != before { // the patch below applies on top of the label
		setDRNamespaceLabel(after, s.req.Namespace)
		after.ResourceVersion, before = claimed.ResourceVersion, claimed
	}
	if err := sd.rc.Direct.Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); err != nil {
		return remoteErr(sd.cluster, what+" VirtualMachine "+s.vmKey().String(), err)
	}
	return nil
}

// vmStopped is true when KubeVirt reports the VM Stopped and its VMI is gone.
func (r *Reconciler) vmStopped(ctx context.Context, s *scope, sd side, vm *kubevirtv1.VirtualMachine) (bool, error) {
	if vm.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusStopped {
		return false, nil
	}
	err := sd.rc.Direct.Get(ctx, s.vmKey(), &kubevirtv1.VirtualMachineInstance{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, remoteErr(sd.cluster, "reading VirtualMachineInstance "+s.vmKey().String(), err)
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
// original volumes in OriginalVolumesAnnotation; the dataVolumeTemplates of
// the DataVolumes it replaced go (see dropOrphanedTemplates).
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
		return fmt.Errorf("recording the original volumes: %w", err)
	}
	setAnnotation(vm, OriginalVolumesAnnotation, string(raw))
	return dropOrphanedTemplates(vm)
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
