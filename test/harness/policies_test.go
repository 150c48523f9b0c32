package harness_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/test/harness"
)

// policyVM is a valid VM by KubeVirt's rules: its template is referenced by a
// DataVolume volume, and its cloud-init volume has no disk, which KubeVirt
// fills in.
func policyVM(name string) *kubevirtv1.VirtualMachine {
	vm := newVM(name)
	vm.Spec.DataVolumeTemplates = []kubevirtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: name + "-root"}}}
	vm.Spec.Template.Spec.Domain.Devices.Disks = []kubevirtv1.Disk{{Name: "root"}, {Name: "data"}}
	vm.Spec.Template.Spec.Volumes = []kubevirtv1.Volume{
		{Name: "root", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: name + "-root"}}},
		{Name: "data", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-data"}}}},
		{Name: "init", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}},
	}
	return vm
}

// TestKubeVirtAdmissionPolicies checks that every cluster with the KubeVirt
// CRDs refuses the VirtualMachines KubeVirt's admission webhook refuses, on
// create and on update, and accepts the valid ones.
func TestKubeVirtAdmissionPolicies(t *testing.T) {
	z := harness.Start(t, harness.Options{Scheme: testScheme(t)}, harness.Primary)
	c := z.Clusters[harness.Primary].Client

	require.NoError(t, c.Create(t.Context(), policyVM("valid")))
	pvcRef := policyVM("pvc-ref")
	// KubeVirt also takes a PVC volume of the template's name as its reference.
	pvcRef.Spec.DataVolumeTemplates = append(pvcRef.Spec.DataVolumeTemplates, kubevirtv1.DataVolumeTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: "pvc-ref-data"}})
	require.NoError(t, c.Create(t.Context(), pvcRef))

	bad := []struct {
		name, want string
		change     func(*kubevirtv1.VirtualMachine)
	}{
		{"unreferenced-template", `spec.dataVolumeTemplates "unreferenced-template-root"`, func(vm *kubevirtv1.VirtualMachine) {
			// What the protection switch did: the DataVolume volume became a PVC
			// volume of another claim and the template stayed.
			vm.Spec.Template.Spec.Volumes[0].VolumeSource = kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "unreferenced-template-root-drbd"}}}
		}},
		{"unnamed-template", `spec.dataVolumeTemplates ""`, func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.DataVolumeTemplates = append(vm.Spec.DataVolumeTemplates, kubevirtv1.DataVolumeTemplateSpec{})
		}},
		{"disk-without-volume", `disks "scratch"`, func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Disks = append(vm.Spec.Template.Spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: "scratch"})
		}},
		{"duplicate-volume", "two volumes share a name", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, vm.Spec.Template.Spec.Volumes[1])
		}},
		{"duplicate-disk", "two disks share a name", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Disks = append(vm.Spec.Template.Spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: "data"})
		}},
		{"running-and-runstrategy", "spec.running and spec.runStrategy", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Running = new(false)
		}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			vm := policyVM(tc.name)
			tc.change(vm)
			err := c.Create(t.Context(), vm)
			require.True(t, apierrors.IsInvalid(err), "create: want Invalid, got %v", err)
			require.ErrorContains(t, err, tc.want)

			vm = policyVM(tc.name)
			require.NoError(t, c.Create(t.Context(), vm))
			before := vm.DeepCopy()
			tc.change(vm)
			err = c.Patch(t.Context(), vm, client.MergeFrom(before))
			require.True(t, apierrors.IsInvalid(err), "update: want Invalid, got %v", err)
			require.ErrorContains(t, err, tc.want)
		})
	}

	// Status writes (the KubeVirt simulator's) are not judged by spec rules.
	vm := policyVM("valid")
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(vm), vm))
	vm.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStopped
	require.NoError(t, c.Status().Update(t.Context(), vm))
}
