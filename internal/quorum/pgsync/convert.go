package pgsync

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/siterecovery/siterecovery/internal/vmdisks"
)

// standbySpec returns the part of a standby VM's spec that pg-sync owns, built
// from the spec of the VM on the active cluster: the template with every
// DataVolume volume turned into a PersistentVolumeClaim volume of the same claim
// name (the DR side has the replicated PVC, never a DataVolume to import), only
// the dataVolumeTemplates a DataVolume volume still names
// (vmdisks.ReferencedTemplates; after that conversion: none), and the instancetype and preference without the source cluster's
// ControllerRevision names. Run fields are never part of it. src is not changed.
func standbySpec(src *kubevirtv1.VirtualMachineSpec) kubevirtv1.VirtualMachineSpec {
	out := kubevirtv1.VirtualMachineSpec{}
	if src.Template != nil {
		out.Template = src.Template.DeepCopy()
		for i := range out.Template.Spec.Volumes {
			convertDataVolume(&out.Template.Spec.Volumes[i])
		}
	}
	out.DataVolumeTemplates = vmdisks.ReferencedTemplates(src.DataVolumeTemplates, out.Template)
	if src.Instancetype != nil {
		out.Instancetype = src.Instancetype.DeepCopy()
		out.Instancetype.RevisionName = ""
	}
	if src.Preference != nil {
		out.Preference = src.Preference.DeepCopy()
		out.Preference.RevisionName = ""
	}
	return out
}

// convertDataVolume turns a DataVolume volume into a PVC volume with the same
// claim name, keeping hotpluggability.
func convertDataVolume(v *kubevirtv1.Volume) {
	dv := v.DataVolume
	if dv == nil {
		return
	}
	v.VolumeSource = kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
		Hotpluggable: dv.Hotpluggable,
	}}
	v.PersistentVolumeClaim.ClaimName = dv.Name
}

// newStandby returns the standby VM to create for src: the owned spec, the
// pg-sync labels and CreatedByLabel on top of src's labels, and run strategy
// Halted. Annotations and status of src are not copied.
func newStandby(src *kubevirtv1.VirtualMachine, labels map[string]string) *kubevirtv1.VirtualMachine {
	halted := kubevirtv1.RunStrategyHalted
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: src.Namespace, Name: src.Name, Labels: map[string]string{}},
		Spec:       standbySpec(&src.Spec),
	}
	for k, v := range src.Labels {
		vm.Labels[k] = v
	}
	for k, v := range labels {
		vm.Labels[k] = v
	}
	vm.Labels[CreatedByLabel] = ControllerName
	vm.Spec.RunStrategy = &halted
	return vm
}

// standbyInSync reports whether vm already carries want and the pg-sync labels.
// Revision names KubeVirt records on the standby itself are not drift.
func standbyInSync(vm *kubevirtv1.VirtualMachine, want kubevirtv1.VirtualMachineSpec, labels map[string]string) bool {
	for k, v := range labels {
		if vm.Labels[k] != v {
			return false
		}
	}
	have := vm.Spec
	return equality.Semantic.DeepEqual(have.Template, want.Template) &&
		equality.Semantic.DeepEqual(have.DataVolumeTemplates, want.DataVolumeTemplates) &&
		sameInstancetype(have.Instancetype, want.Instancetype) &&
		samePreference(have.Preference, want.Preference)
}

// setStandbySpec writes want and the pg-sync labels into vm and leaves every
// other field alone: run fields, annotations and status belong to the
// ProtectionGroup controller and KubeVirt of that cluster.
func setStandbySpec(vm *kubevirtv1.VirtualMachine, want kubevirtv1.VirtualMachineSpec, labels map[string]string) {
	if vm.Labels == nil {
		vm.Labels = map[string]string{}
	}
	for k, v := range labels {
		vm.Labels[k] = v
	}
	vm.Spec.Template = want.Template.DeepCopy()
	vm.Spec.DataVolumeTemplates = want.DataVolumeTemplates
	if !sameInstancetype(vm.Spec.Instancetype, want.Instancetype) {
		vm.Spec.Instancetype = want.Instancetype.DeepCopy()
	}
	if !samePreference(vm.Spec.Preference, want.Preference) {
		vm.Spec.Preference = want.Preference.DeepCopy()
	}
}

func sameInstancetype(a, b *kubevirtv1.InstancetypeMatcher) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.RevisionName, y.RevisionName = "", ""
	return equality.Semantic.DeepEqual(x, y)
}

func samePreference(a, b *kubevirtv1.PreferenceMatcher) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.RevisionName, y.RevisionName = "", ""
	return equality.Semantic.DeepEqual(x, y)
}

// vmActive reports a VM that runs or is on its way up or down. pg-sync never
// changes such a VM on a non-active cluster: it would be one VM on two sites.
func vmActive(vm *kubevirtv1.VirtualMachine) bool {
	if vm.Status.Created || vm.Status.Ready {
		return true
	}
	switch vm.Status.PrintableStatus {
	case kubevirtv1.VirtualMachineStatusRunning, kubevirtv1.VirtualMachineStatusStarting,
		kubevirtv1.VirtualMachineStatusPaused, kubevirtv1.VirtualMachineStatusMigrating,
		kubevirtv1.VirtualMachineStatusStopping:
		return true
	}
	return false
}
