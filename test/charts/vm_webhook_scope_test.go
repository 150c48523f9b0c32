package charts

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestVMWebhookOnlyInApplicationNamespaces installs the workload chart's
// webhook configuration on a real API server with pg-controller down (its
// Service has no pod, so every call fails, and the VM webhook fails closed):
// VM writes in an application namespace of quorumAccess.applicationNamespaces
// wait for pg-controller, and VM writes in any other namespace do not. With
// no application namespace listed, no VM webhook is rendered at all.
func TestVMWebhookOnlyInApplicationNamespaces(t *testing.T) {
	const webhook = "standby-vms.workload.siterecovery.trilio.io"
	vmWebhooks := func(objs []*unstructured.Unstructured) int {
		n := 0
		for _, o := range objs {
			if o.GetKind() != "ValidatingWebhookConfiguration" {
				continue
			}
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, h := range hooks {
				if h.(map[string]any)["name"] == webhook {
					n++
				}
			}
		}
		return n
	}
	require.Zero(t, vmWebhooks(renderValues(t, "workload-control-plane", "siterecovery-system",
		map[string]any{"quorumAccess": map[string]any{"drNamespaces": []any{"dr-production"}}})), "no application namespace, no VM webhook")

	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, harness.Primary)
	admin, ctx := zone.Clusters[harness.Primary].Client, t.Context()
	objs := renderValues(t, "workload-control-plane", "siterecovery-system", map[string]any{"quorumAccess": map[string]any{
		"drNamespaces": []any{"dr-production"}, "applicationNamespaces": map[string]any{"dr-production": []any{"apps"}}}})
	require.Equal(t, 1, vmWebhooks(objs))
	for _, ns := range []string{"siterecovery-system", "apps", "unrelated"} {
		require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	for _, o := range objs {
		if o.GetKind() == "ValidatingWebhookConfiguration" {
			require.NoError(t, admin.Create(ctx, o))
		}
	}
	vm := func(namespace string) *kubevirtv1.VirtualMachine {
		return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web"},
			Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}}
	}
	// The API server picks the configuration up within a moment.
	require.Eventually(t, func() bool {
		err := admin.Create(ctx, vm("apps"), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), webhook)
	}, 30*time.Second, 100*time.Millisecond, "VM writes in apps never called the webhook")
	require.NoError(t, admin.Create(ctx, vm("unrelated")), "a VM of a namespace nobody protects, while pg-controller is down")
	v := vm("unrelated")
	require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(v), v))
	v.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
	require.NoError(t, admin.Update(ctx, v))
	require.NoError(t, admin.Delete(ctx, v))
}
