package protection

import (
	"encoding/json"
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/siterecovery/siterecovery/internal/vmdisks"
)

// dropOrphanedTemplates removes the dataVolumeTemplates that no DataVolume
// volume names once the switch pointed the disks at their frontend PVCs:
// KubeVirt refuses a VM whose template no volume references, so keeping them
// would have every patch of the switch refused and the VM left Halted. The
// VM's whole list is kept in OriginalDataVolumeTemplatesAnnotation for
// restoreTemplates. An annotation already there is older and so the original.
// The DataVolumes stay: KubeVirt deletes a VM's DataVolumes only with the VM.
func dropOrphanedTemplates(vm *kubevirtv1.VirtualMachine) error {
	kept := vmdisks.ReferencedTemplates(vm.Spec.DataVolumeTemplates, vm.Spec.Template)
	if len(kept) == len(vm.Spec.DataVolumeTemplates) {
		return nil
	}
	if _, ok := vm.Annotations[OriginalDataVolumeTemplatesAnnotation]; !ok {
		raw, err := json.Marshal(vm.Spec.DataVolumeTemplates)
		if err != nil {
			return fmt.Errorf("recording the dataVolumeTemplates: %w", err)
		}
		setAnnotation(vm, OriginalDataVolumeTemplatesAnnotation, string(raw))
	}
	vm.Spec.DataVolumeTemplates = kept
	return nil
}

// restoreTemplates puts back the dataVolumeTemplates dropOrphanedTemplates
// removed, in their original order; a template the VM still has keeps its
// current version, and templates added since stay after them. An annotation
// that is not valid JSON is dropped with the VM's templates left as they are:
// the DataVolumes still exist, and holding the removal for it would keep the
// VM off its disks.
func restoreTemplates(vm *kubevirtv1.VirtualMachine) {
	raw, ok := vm.Annotations[OriginalDataVolumeTemplatesAnnotation]
	delete(vm.Annotations, OriginalDataVolumeTemplatesAnnotation)
	var orig []kubevirtv1.DataVolumeTemplateSpec
	if !ok || json.Unmarshal([]byte(raw), &orig) != nil {
		return
	}
	current := map[string]kubevirtv1.DataVolumeTemplateSpec{}
	for _, t := range vm.Spec.DataVolumeTemplates {
		current[t.Name] = t
	}
	out := make([]kubevirtv1.DataVolumeTemplateSpec, 0, len(orig)+len(current))
	for _, t := range orig {
		if c, ok := current[t.Name]; ok {
			t = c
			delete(current, t.Name)
		}
		out = append(out, t)
	}
	for _, t := range vm.Spec.DataVolumeTemplates {
		if _, added := current[t.Name]; added {
			out = append(out, t)
		}
	}
	vm.Spec.DataVolumeTemplates = out
}
