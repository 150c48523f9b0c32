package vmdisks

import kubevirtv1 "kubevirt.io/api/core/v1"

// ReferencedTemplates returns copies of the dataVolumeTemplates that a
// DataVolume volume of tmpl names, in their order.
//
// KubeVirt refuses a VirtualMachine with a dataVolumeTemplate that no volume
// references, so whatever turns DataVolume volumes into PVC volumes (the
// protection switch onto DRBD frontend PVCs, pg-sync's standby) must drop the
// templates it orphans. KubeVirt also counts a PVC volume of the template's
// name as a reference; siterecovery keeps only templates that a DataVolume
// volume uses, because a template kept for a PVC volume would have KubeVirt
// create a DataVolume (an import on the DR cluster) that no disk of the VM
// asked for.
func ReferencedTemplates(in []kubevirtv1.DataVolumeTemplateSpec, tmpl *kubevirtv1.VirtualMachineInstanceTemplateSpec) []kubevirtv1.DataVolumeTemplateSpec {
	used := map[string]bool{}
	if tmpl != nil {
		for _, v := range tmpl.Spec.Volumes {
			if v.DataVolume != nil {
				used[v.DataVolume.Name] = true
			}
		}
	}
	var out []kubevirtv1.DataVolumeTemplateSpec
	for _, t := range in {
		if used[t.Name] {
			out = append(out, *t.DeepCopy())
		}
	}
	return out
}
