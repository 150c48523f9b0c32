package drzone

import (
	"fmt"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// frontendSuffix ends the name of a DRBD frontend PVC: "<pvc>-drbd" is the
// claim a protected VM names, "<pvc>" the backing PVC under it.
const frontendSuffix = "-drbd"

// replicatedDisk creates on a cluster what the protection flow leaves for a
// VM's disk "<vm>-disk": the backing PVC, and the frontend PV and PVC on the
// DRBD device /dev/drbd<minor> of the cluster's node.
func (z *Zone) replicatedDisk(cluster, vm string, minor int32) {
	name := vm + "-disk"
	pv := "srdrbd-" + env.AppNS + "-" + name
	z.Create(cluster, PVC(name, srv1alpha1.ObjectRoleBacking, "standard", ""))
	z.Create(cluster, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pv, Labels: map[string]string{srv1alpha1.ObjectRoleLabel: srv1alpha1.ObjectRoleFrontend}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: env.AppNS, Name: name + frontendSuffix},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: fmt.Sprintf("/dev/drbd%d", minor)}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{env.Nodes[cluster].Name}}},
			}}}},
		},
	})
	z.Create(cluster, PVC(name+frontendSuffix, srv1alpha1.ObjectRoleFrontend, "", pv))
}

// PVC is a 1Gi block claim in the app namespace; role, when set, is its
// object-role label.
func PVC(name, role, class, volume string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
			StorageClassName: ptr.To(class), VolumeName: volume,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if role != "" {
		pvc.Labels = map[string]string{srv1alpha1.ObjectRoleLabel: role}
	}
	return pvc
}

// VM is a VM of the app namespace with one disk on claim.
func VM(name, claim string, s kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(s), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Disks: []kubevirtv1.Disk{{Name: "root"}}}},
				Volumes: []kubevirtv1.Volume{{Name: "root", VolumeSource: kubevirtv1.VolumeSource{
					PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
						PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
			},
		}},
	}
}

// Create creates obj on a cluster of the zone.
func (z *Zone) Create(cluster string, obj client.Object) {
	z.T.Helper()
	require.NoError(z.T, z.Client(cluster).Create(z.Ctx, obj))
}

// EnsureNamespace creates a namespace unless it exists.
func (z *Zone) EnsureNamespace(cluster, name string) {
	z.T.Helper()
	err := z.Client(cluster).Create(z.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	require.NoError(z.T, client.IgnoreAlreadyExists(err))
}

// DRBDResource reads a group VM's DRBD resource on a cluster.
func (z *Zone) DRBDResource(cluster, vm string) *srv1alpha1.DRBDResource {
	z.T.Helper()
	r := &srv1alpha1.DRBDResource{}
	require.NoError(z.T, z.Client(cluster).Get(z.Ctx, client.ObjectKey{Namespace: env.AppNS, Name: srv1alpha1.DRBDResourceName(vm)}, r))
	return r
}

// WaitDRBD waits until ok holds for a VM's DRBD resource on a cluster.
func (z *Zone) WaitDRBD(cluster, vm string, ok func(*srv1alpha1.DRBDResource) bool) {
	z.T.Helper()
	env.Eventually(z.T, Timeout, cluster+" "+vm+" DRBD", func() error {
		r := &srv1alpha1.DRBDResource{}
		if err := z.Client(cluster).Get(z.Ctx, client.ObjectKey{Namespace: env.AppNS, Name: srv1alpha1.DRBDResourceName(vm)}, r); err != nil {
			return err
		}
		if !ok(r) {
			return fmt.Errorf("status %+v", r.Status)
		}
		return nil
	})
}

// WaitRunning waits until the group runs on a cluster.
func (z *Zone) WaitRunning(cluster string) {
	z.T.Helper()
	env.Eventually(z.T, Timeout, "group running on "+cluster, func() error {
		pg := &srv1alpha1.ProtectionGroup{}
		if err := z.Client(cluster).Get(z.Ctx, client.ObjectKey{Namespace: env.Namespace, Name: Group}, pg); err != nil {
			return err
		}
		if pg.Status.CurrentState != srv1alpha1.StateRunning {
			return fmt.Errorf("currentState %q", pg.Status.CurrentState)
		}
		return nil
	})
}

// WaitProtected waits until a ProtectionRequest is Protected.
func (z *Zone) WaitProtected(name string) *srv1alpha1.ProtectionRequest {
	z.T.Helper()
	pr := &srv1alpha1.ProtectionRequest{}
	env.Eventually(z.T, Timeout, "ProtectionRequest "+name+" Protected", func() error {
		if err := z.Client(env.Quorum).Get(z.Ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, pr); err != nil {
			return err
		}
		if pr.Status.Phase != srv1alpha1.ProtectionProtected {
			return fmt.Errorf("phase %q: %+v", pr.Status.Phase, pr.Status.Conditions)
		}
		return nil
	})
	return pr
}
