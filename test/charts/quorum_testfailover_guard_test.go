package charts

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// testLabels are the labels a test failover puts on its isolated namespace
// (internal/quorum/testfailover labelsOf).
func testLabels(drNamespace string) map[string]string {
	return map[string]string{srv1alpha1.ManagedByLabel: srv1alpha1.ManagedByValue,
		"siterecovery.trilio.io/test-failover": "t1", "siterecovery.trilio.io/test-failover-uid": "u2",
		srv1alpha1.DRNamespaceLabel: drNamespace}
}

// testCopy is a test failover's copy of a standby VM in namespace: running,
// its disk a restored PVC, a cloud-init volume, the pod network only.
func testCopy(namespace string) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web", Labels: map[string]string{srv1alpha1.DRNamespaceLabel: "dr-production"}},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{
					Disks: []kubevirtv1.Disk{{Name: "root"}, {Name: "init"}},
					Interfaces: []kubevirtv1.Interface{{Name: "default",
						InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}}},
				}},
				Networks: []kubevirtv1.Network{*kubevirtv1.DefaultPodNetwork()},
				Volumes: []kubevirtv1.Volume{
					{Name: "root", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
						PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "srtest-web-root"}}}},
					{Name: "init", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "#cloud-config"}}},
				},
			},
		}},
	}
}

// claim is a block PVC in namespace labelled for dr-production, restored from
// source when it is not nil.
func claim(namespace string, source *corev1.TypedLocalObjectReference) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "srtest-web-root", Labels: map[string]string{srv1alpha1.DRNamespaceLabel: "dr-production"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:  ptr.To(corev1.PersistentVolumeBlock),
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			DataSource:  source,
		},
	}
}

// checkTestFailoverShapes acts as dr-production's quorum identity (a stolen
// quorum kubeconfig) against the guard's rules on namespaces, VMs and PVCs:
// what a test failover, pg-sync and the protection flow create passes; a
// namespace with weaker PodSecurity, a VM that boots an image of the
// attacker's choice or reaches the host, a VM outside the isolated and
// application namespaces, and a PVC cloned from an application's disk are
// refused. testNS is dr-production's isolated namespace.
func checkTestFailoverShapes(t *testing.T, g guarded, testNS string) {
	admin, quorum, ctx, dry := g.admin, g.quorum, t.Context(), client.DryRunAll
	for name, labels := range map[string]map[string]string{"other": nil,
		"staging-test": testLabels("dr-staging")} {
		require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}))
	}
	snapshot := &corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot", Name: "srtest-web-root"}
	standby := testCopy("apps")
	standby.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)

	t.Run("what the flows create", func(t *testing.T) {
		require.NoError(t, quorum.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sr-test-t1", Labels: testLabels("dr-production")}}, dry),
			"a test failover's isolated namespace")
		// Admission runs before the store finds the name taken: AlreadyExists
		// means the guard let the namespace through.
		err := quorum.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, dry)
		require.True(t, apierrors.IsAlreadyExists(err), "an application namespace of dr-production: %v", err)
		require.NoError(t, quorum.Create(ctx, claim(testNS, snapshot), dry), "a PVC restored from a VolumeSnapshot")
		require.NoError(t, quorum.Create(ctx, testCopy(testNS), dry), "a test copy of a VM")
		require.NoError(t, quorum.Create(ctx, standby.DeepCopy(), dry), "a Halted standby in an application namespace")
		require.NoError(t, quorum.Create(ctx, claim("apps", nil), dry), "a backing PVC")
	})

	nsRule := "creates a namespace only as the isolated namespace of a test failover"
	vmRule := "creates VirtualMachines only as test failover copies in its isolated namespaces"
	pvcRule := "creates PersistentVolumeClaims only restored from a VolumeSnapshot"
	t.Run("a stolen quorum kubeconfig", func(t *testing.T) {
		privileged := testLabels("dr-production")
		privileged["pod-security.kubernetes.io/enforce"] = "privileged"
		refused(t, quorum.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sr-test-x", Labels: privileged}}, dry), nsRule)
		refused(t, quorum.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sr-test-x", Labels: testLabels("dr-staging")}}, dry), nsRule)
		refused(t, quorum.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "miner"}}, dry), nsRule+", labelled as the test labels it")
		refused(t, quorum.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sr-test-x", Labels: testLabels("dr-production"),
			Annotations: map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "node-role.kubernetes.io/control-plane="}}}, dry), nsRule)

		for name, change := range map[string]func(*kubevirtv1.VirtualMachine){
			"containerDisk": func(vm *kubevirtv1.VirtualMachine) {
				vm.Spec.Template.Spec.Volumes[0].VolumeSource = kubevirtv1.VolumeSource{ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "attacker.example/miner:1"}}
			},
			"hostDisk": func(vm *kubevirtv1.VirtualMachine) {
				vm.Spec.Template.Spec.Volumes[0].VolumeSource = kubevirtv1.VolumeSource{HostDisk: &kubevirtv1.HostDisk{Path: "/var/lib/kubelet/x.img", Type: kubevirtv1.HostDiskExists}}
			},
			"hook sidecar": func(vm *kubevirtv1.VirtualMachine) {
				vm.Spec.Template.ObjectMeta.Annotations = map[string]string{"hooks.kubevirt.io/hookSidecars": `[{"image": "attacker.example/hook:1"}]`}
			},
			"a DataVolume importing a URL": func(vm *kubevirtv1.VirtualMachine) {
				vm.Spec.DataVolumeTemplates = []kubevirtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "dv"}}}
				vm.Spec.Template.Spec.Volumes[0].VolumeSource = kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "dv"}}
			},
			"a bridged production network": func(vm *kubevirtv1.VirtualMachine) {
				vm.Spec.Template.Spec.Networks = append(vm.Spec.Template.Spec.Networks, kubevirtv1.Network{Name: "prod",
					NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "prod-vlan"}}})
				vm.Spec.Template.Spec.Domain.Devices.Interfaces = append(vm.Spec.Template.Spec.Domain.Devices.Interfaces, kubevirtv1.Interface{Name: "prod",
					InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}})
			},
		} {
			vm := testCopy(testNS)
			change(vm)
			refused(t, quorum.Create(ctx, vm, dry), vmRule)
			t.Logf("a test VM with %s is refused", name)
		}
		hooked := testCopy(testNS)
		hooked.Spec.Template.ObjectMeta.Annotations = map[string]string{"hooks.kubevirt.io/hookSidecars": `[{"image": "registry.example/hook:1"}]`}
		refused(t, quorum.Create(ctx, hooked, dry), "no hook sidecars: quorumAccess.testFailover.allowHookSidecars is false")
		// The test copy carries the quorum identity's label, so it may be
		// changed: only within the same shape.
		created := testCopy(testNS)
		require.NoError(t, quorum.Create(ctx, created))
		changed := created.DeepCopy()
		changed.Spec.Template.Spec.Volumes[0].VolumeSource = kubevirtv1.VolumeSource{ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "attacker.example/miner:1"}}
		refused(t, quorum.Patch(ctx, changed, client.MergeFrom(created), dry), vmRule)

		running := standby.DeepCopy()
		running.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
		refused(t, quorum.Create(ctx, running, dry), vmRule)
		refused(t, quorum.Create(ctx, testCopy("other"), dry), vmRule)
		refused(t, quorum.Create(ctx, testCopy("staging-test"), dry), vmRule)

		refused(t, quorum.Create(ctx, claim(testNS, nil), dry), pvcRule)
		clone := &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "web-disk"}
		refused(t, quorum.Create(ctx, claim(testNS, clone), dry), pvcRule)
		refused(t, quorum.Create(ctx, claim("apps", clone), dry), pvcRule)
		refused(t, quorum.Create(ctx, claim("apps", snapshot), dry), pvcRule)
		refused(t, quorum.Create(ctx, claim("other", nil), dry), pvcRule)
	})
}

// checkHookSidecarsAllowed: under quorumAccess.testFailover.allowHookSidecars
// the guard admits a test copy with the production VM's hook sidecars, and
// still refuses a test copy that breaks any other rule.
func checkHookSidecarsAllowed(t *testing.T, g guarded) {
	admin, quorum, ctx, dry := g.admin, g.quorum, t.Context(), client.DryRunAll
	testNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sr-test-hooks", Labels: testLabels("dr-production")}}
	require.NoError(t, admin.Create(ctx, testNS))
	hooked := testCopy(testNS.Name)
	hooked.Spec.Template.ObjectMeta.Annotations = map[string]string{"hooks.kubevirt.io/hookSidecars": `[{"image": "registry.example/hook:1"}]`}
	require.NoError(t, quorum.Create(ctx, hooked.DeepCopy(), dry), "a test copy with hook sidecars")
	hooked.Spec.Template.Spec.Volumes[0].VolumeSource = kubevirtv1.VolumeSource{ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "attacker.example/miner:1"}}
	refused(t, quorum.Create(ctx, hooked, dry), "hook sidecars admitted by quorumAccess.testFailover.allowHookSidecars")
}
