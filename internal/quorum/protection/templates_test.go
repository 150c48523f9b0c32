package protection

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

func dvTemplate(name, size string) kubevirtv1.DataVolumeTemplateSpec {
	return kubevirtv1.DataVolumeTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"size": size}}}
}

// The switch drops the templates of the DataVolumes it replaced, and the swap
// back restores the VM's list exactly; a template the user added meanwhile stays.
func TestSwapDropsAndRestoresTemplates(t *testing.T) {
	vm := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{
		DataVolumeTemplates: []kubevirtv1.DataVolumeTemplateSpec{dvTemplate("db-data", "1Gi"), dvTemplate("db-root", "1Gi"), dvTemplate("db-scratch", "1Gi")},
		Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{
			{Name: "root", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "db-root"}}},
			{Name: "data", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "db-data"}}},
			{Name: "scratch", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "db-scratch"}}},
		}}},
	}}
	original := vm.Spec.DeepCopy()
	vols := []srv1alpha1.ProtectedVolume{{Disk: "root", SourcePVC: "db-root", FrontendPVC: "db-root-drbd"}, {Disk: "data", SourcePVC: "db-data", FrontendPVC: "db-data-drbd"}}

	require.NoError(t, swapVolumes(vm, vols))
	require.Equal(t, []kubevirtv1.DataVolumeTemplateSpec{dvTemplate("db-scratch", "1Gi")}, vm.Spec.DataVolumeTemplates,
		"only the template a DataVolume volume still names stays")
	require.Contains(t, vm.Annotations, OriginalDataVolumeTemplatesAnnotation)

	vm.Spec.DataVolumeTemplates[0] = dvTemplate("db-scratch", "2Gi") // edited while protected
	vm.Spec.DataVolumeTemplates = append(vm.Spec.DataVolumeTemplates, dvTemplate("db-new", "1Gi"))
	require.NoError(t, swapBack(vm, vols, true))
	require.Equal(t, []kubevirtv1.DataVolumeTemplateSpec{dvTemplate("db-data", "1Gi"), dvTemplate("db-root", "1Gi"), dvTemplate("db-scratch", "2Gi"), dvTemplate("db-new", "1Gi")},
		vm.Spec.DataVolumeTemplates)
	require.Equal(t, original.Template, vm.Spec.Template)
	require.Empty(t, vm.Annotations)
}

// A VM whose templates all stay referenced is not annotated; the DR VM, which
// moves onto its backing PVCs, gets no templates back.
func TestTemplatesUntouchedOrNotRestoredOnDR(t *testing.T) {
	pvcOnly := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
		Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{{Name: "root", VolumeSource: kubevirtv1.VolumeSource{
			PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "db-root"}}}}}}}}}
	vols := []srv1alpha1.ProtectedVolume{{Disk: "root", SourcePVC: "db-root", FrontendPVC: "db-root-drbd", TargetPVC: "db-root"}}
	require.NoError(t, swapVolumes(pvcOnly, vols))
	require.NotContains(t, pvcOnly.Annotations, OriginalDataVolumeTemplatesAnnotation)

	dr := pvcOnly.DeepCopy()
	setAnnotation(dr, OriginalDataVolumeTemplatesAnnotation, `[{"metadata":{"name":"db-root"}}]`)
	require.NoError(t, swapBack(dr, vols, false))
	require.Empty(t, dr.Spec.DataVolumeTemplates)
	require.NotContains(t, dr.Annotations, OriginalDataVolumeTemplatesAnnotation)
}
