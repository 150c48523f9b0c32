package charts

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// TestQuorumGuardClaimsOnlyInItsApplicationNamespaces is the attack of a
// stolen quorum token on a workload cluster: label an unprotected VM or PVC
// of any namespace into its DR namespace (a claim, which the guard admits so
// that protection can take a VM into its care), then change or delete it as
// its own. With quorumAccess.applicationNamespaces, dr-production claims only
// in apps, and dr-staging, which lists none, nowhere; the refusal names the
// value to set.
func TestQuorumGuardClaimsOnlyInItsApplicationNamespaces(t *testing.T) {
	g := startGuarded(t)
	admin, ctx := g.admin, t.Context()
	dry := client.DryRunAll
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "billing"}}))
	vm := func(namespace string) *kubevirtv1.VirtualMachine {
		return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ledger", Labels: map[string]string{"app": "ledger"}},
			Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}}
	}
	pvc := func(namespace string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ledger-root"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	}
	for _, ns := range []string{"apps", "billing"} {
		require.NoError(t, admin.Create(ctx, vm(ns)))
		require.NoError(t, admin.Create(ctx, pvc(ns)))
	}
	cfg := rest.CopyConfig(g.config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:dr-staging:quorum-manager",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:dr-staging", "system:authenticated"}}
	staging, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)

	// claim adds the labels protection adds to a VM or source PVC, as a
	// merge patch of a fresh read with its resourceVersion.
	claim := func(as client.Client, obj client.Object, drNamespace string) error {
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		before := obj.DeepCopyObject().(client.Object)
		l := obj.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[srv1alpha1.DRNamespaceLabel], l[srv1alpha1.ProtectionRequestLabel] = drNamespace, "protect-ledger"
		obj.SetLabels(l)
		return as.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), dry)
	}

	require.NoError(t, claim(g.quorum, vm("apps"), "dr-production"), "a VM of the namespace it protects")
	require.NoError(t, claim(g.quorum, pvc("apps"), "dr-production"), "a PVC of the namespace it protects")
	const production = "quorum-manager of dr-production takes VirtualMachines and PersistentVolumeClaims into its care only in the " +
		"application namespaces it protects, quorumAccess.applicationNamespaces.dr-production of the workload-control-plane chart (apps); "
	refused(t, claim(g.quorum, vm("billing"), "dr-production"), production+"virtualmachines billing/ledger is not in one: list its namespace there to protect it")
	refused(t, claim(g.quorum, pvc("billing"), "dr-production"), production+"persistentvolumeclaims billing/ledger-root is not in one")
	const none = "quorum-manager of dr-staging takes VirtualMachines and PersistentVolumeClaims into its care only in the " +
		"application namespaces it protects, quorumAccess.applicationNamespaces.dr-staging of the workload-control-plane chart (empty); "
	refused(t, claim(staging, vm("apps"), "dr-staging"), none+"virtualmachines apps/ledger is not in one")
	refused(t, claim(staging, pvc("billing"), "dr-staging"), none+"persistentvolumeclaims billing/ledger-root is not in one")
	// Without the claim, nothing else opens the unprotected VM to it.
	refused(t, g.quorum.Delete(ctx, vm("billing"), dry), "changes or deletes only what carries its label")
}
