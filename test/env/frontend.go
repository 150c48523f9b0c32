package env

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// CreateFrontend gives vm (not yet created) the disk "disk" on the frontend
// claim "<claim>-drbd" of a workload cluster, as the protection flow leaves a
// protected VM: a local PV on /dev/drbd<minor> that only node can attach, so
// the scheduler puts the VM's launcher pod on the node of its replica, and
// nowhere else. It creates the PV and the claim pre-bound to each other; the
// PV binder of a full control plane binds them.
func (e *Env) CreateFrontend(t testing.TB, cluster string, vm *kubevirtv1.VirtualMachine, claim string, minor int32, node string) {
	t.Helper()
	pvName := fmt.Sprintf("srdrbd-%s-%s", vm.Namespace, claim)
	frontend := claim + "-drbd"
	size := resource.MustParse("1Gi")
	labels := map[string]string{srv1alpha1.ObjectRoleLabel: "frontend"}
	create(t, e.Client(cluster), &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: labels},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: vm.Namespace, Name: frontend},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: fmt.Sprintf("/dev/drbd%d", minor)}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	})
	create(t, e.Client(cluster), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: frontend, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
			StorageClassName: ptr.To(""), VolumeName: pvName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	})
	spec := &vm.Spec.Template.Spec
	spec.Volumes = append(spec.Volumes, kubevirtv1.Volume{Name: "disk", VolumeSource: kubevirtv1.VolumeSource{
		PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: frontend}}}})
	spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: "disk"})
}

// VMINode is the node a workload cluster's VMI of a VM in AppNS runs on.
func (e *Env) VMINode(t testing.TB, cluster, vm string) string {
	t.Helper()
	vmi := &kubevirtv1.VirtualMachineInstance{}
	require.NoError(t, e.Client(cluster).Get(context.Background(), types.NamespacedName{Namespace: AppNS, Name: vm}, vmi))
	return vmi.Status.NodeName
}
