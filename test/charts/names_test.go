package charts

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// overridden are the charts rendered with fullnameOverride, as one install
// would set them: each quorum-control-plane release names the protectionzone
// release's renamed webhook ServiceAccount.
var overridden = []struct {
	dir, namespace string
	values         map[string]any
	// fixed are the names that stay as they are: the product's interface
	// (user roles, confirmation policies, the zone webhook's reader role, the
	// quorum-access settings quorum-manager reads by name), the DR namespaces
	// and the quorum identity the other clusters' kubeconfigs name.
	fixed []string
}{
	{"protectionzone", "siterecovery-system", map[string]any{"fullnameOverride": "acme"},
		[]string{"siterecovery-viewer", "siterecovery-operator", "siterecovery-disaster-operator", "siterecovery-admin",
			"siterecovery-zone-webhook-reader", "siterecovery-confirm-disaster-failover", "siterecovery-confirm-drpc-failover",
			"siterecovery-confirm-force-unprotect", "siterecovery-confirm-discard-diverged"}},
	{"quorum-control-plane", "dr-production", map[string]any{"fullnameOverride": "acme-production",
		"zoneWebhook": map[string]any{"serviceAccount": "acme-zone-webhook"}}, nil},
	{"workload-control-plane", "siterecovery-system", map[string]any{"fullnameOverride": "acme",
		"quorumAccess": map[string]any{"drNamespaces": []any{"dr-production"}},
		"volsync":      map[string]any{"applicationNamespaces": []any{"apps"}}},
		[]string{"dr-production", "dr-production-drbd-auth", "quorum-manager", "siterecovery-quorum-access"}},
}

// TestChartsFullnameOverrideRenamesConsistently renders every chart with
// fullnameOverride and checks that each object of the release takes the name
// (but the fixed ones), and that every name an object refers to is one the
// charts render: pods' ServiceAccounts, role bindings' roles and subjects,
// admission policy bindings' policies, webhooks' Services.
func TestChartsFullnameOverrideRenamesConsistently(t *testing.T) {
	var all []*unstructured.Unstructured
	for _, ch := range overridden {
		objs := renderValues(t, ch.dir, ch.namespace, ch.values)
		for _, o := range objs {
			if !strings.HasPrefix(o.GetName(), "acme") {
				require.Contains(t, ch.fixed, o.GetName(), "%s: %s %s/%s does not follow fullnameOverride", ch.dir, o.GetKind(), o.GetNamespace(), o.GetName())
			}
		}
		all = append(all, objs...)
	}
	rendered := map[string]bool{}
	key := func(kind, ns, name string) string { return kind + "/" + ns + "/" + name }
	for _, o := range all {
		rendered[key(o.GetKind(), o.GetNamespace(), o.GetName())] = true
	}
	refs := 0
	ref := func(from *unstructured.Unstructured, kind, ns, name string) {
		t.Helper()
		refs++
		require.True(t, rendered[key(kind, ns, name)], "%s %s/%s refers to %s %s/%s, which no chart renders",
			from.GetKind(), from.GetNamespace(), from.GetName(), kind, ns, name)
	}
	for _, o := range all {
		if spec, ok := podTemplate(o); ok {
			ref(o, "ServiceAccount", o.GetNamespace(), spec["serviceAccountName"].(string))
		}
		switch o.GetKind() {
		case "RoleBinding", "ClusterRoleBinding":
			roleKind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind")
			role, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
			switch {
			case strings.HasPrefix(role, "system:"):
			case roleKind == "Role":
				ref(o, "Role", o.GetNamespace(), role)
			default:
				ref(o, "ClusterRole", "", role)
			}
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			for _, s := range subjects {
				s := s.(map[string]any)
				if s["kind"] == "ServiceAccount" {
					ref(o, "ServiceAccount", s["namespace"].(string), s["name"].(string))
				}
			}
		case "ValidatingAdmissionPolicyBinding":
			policy, _, _ := unstructured.NestedString(o.Object, "spec", "policyName")
			ref(o, "ValidatingAdmissionPolicy", "", policy)
		case "ValidatingWebhookConfiguration":
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, h := range hooks {
				svc, _, _ := unstructured.NestedMap(h.(map[string]any), "clientConfig", "service")
				ref(o, "Service", svc["namespace"].(string), svc["name"].(string))
			}
		}
	}
	require.Greater(t, refs, 40, "too few references checked")
}

// TestChartsInstallWithFullnameOverride installs the three charts rendered
// with fullnameOverride in a real API server, and acts as the renamed agent
// (a token bound to its pod on node-1, as the kubelet mints it) and as the
// renamed pg-controller: their renamed roles grant what they use, and the
// renamed admission policies still recognise them and refuse what they refuse
// by default. A policy that kept the default ServiceAccount name would let
// them through, a binding that kept it would leave them Forbidden.
func TestChartsInstallWithFullnameOverride(t *testing.T) {
	s := scheme.New()
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: s}, "quorum")
	cluster := zone.Clusters["quorum"]
	admin, ctx := cluster.Client, t.Context()
	for _, ns := range []string{"siterecovery-system", "dr-production", "apps"} {
		ensureNamespace(t, ctx, admin, ns)
	}
	for _, ch := range overridden {
		for _, obj := range renderValues(t, ch.dir, ch.namespace, ch.values) {
			if obj.GetKind() == "Namespace" && obj.GetName() == "dr-production" {
				continue
			}
			require.NoError(t, admin.Create(ctx, obj), "%s: creating %s %s", ch.dir, obj.GetKind(), obj.GetName())
		}
	}
	for _, n := range []string{"node-1", "node-2"} {
		require.NoError(t, admin.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}))
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "siterecovery-system", Name: "acme-drbd-node-agent-x"},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "acme-drbd-node-agent",
			Containers: []corev1.Container{{Name: "agent", Image: "agent"}}}}
	require.NoError(t, admin.Create(ctx, pod))
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600)),
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "siterecovery-system", Name: "acme-drbd-node-agent"}}
	require.NoError(t, admin.SubResource("token").Create(ctx, sa, tr))
	cfg := rest.AnonymousClientConfig(cluster.Config)
	cfg.BearerToken = tr.Status.Token
	agent, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)

	taint := func(c client.Client, node string) error {
		n := &corev1.Node{}
		require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: node}, n))
		base := n.DeepCopy()
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: srv1alpha1.LostQuorumTaintKey, Effect: corev1.TaintEffectNoSchedule})
		return c.Patch(ctx, n, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.DryRunAll)
	}
	// The authorizer and the API server's policy cache pick new objects up within a moment.
	require.Eventually(t, func() bool {
		err := taint(agent, "node-2")
		return err != nil && strings.Contains(err.Error(), "acme-drbd-node-agent-scope")
	}, 30*time.Second, 100*time.Millisecond, "the renamed agent-scope policy never refused another node's taint")
	require.NoError(t, taint(agent, "node-1"), "the renamed agent may taint its own node (its renamed ClusterRoleBinding)")

	pg := impersonate(t, cluster.Config, s, "system:serviceaccount:siterecovery-system:acme-pg-controller")
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "g-vs-secret"}, Data: map[string][]byte{"psk.txt": []byte("k")}}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app-credentials"}, Data: map[string][]byte{"a": []byte("b")}}
	// The guard is a policy of its own, loaded on its own: wait until it
	// refuses, then the key it lets through is checked with it in effect.
	require.Eventually(t, func() bool {
		err := pg.Create(ctx, other.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "acme-pg-controller-secrets")
	}, 30*time.Second, 100*time.Millisecond, "the renamed Secret guard never refused the renamed pg-controller another Secret")
	require.Eventually(t, func() bool { return pg.Create(ctx, key.DeepCopy(), client.DryRunAll) == nil },
		30*time.Second, 100*time.Millisecond, "the renamed pg-controller never could copy the VolSync key (its renamed Role binding)")
}

// impersonate returns a client acting as a ServiceAccount's user name.
func impersonate(t *testing.T, base *rest.Config, s *runtime.Scheme, user string) client.Client {
	t.Helper()
	ns := strings.Split(user, ":")[2]
	cfg := rest.CopyConfig(base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user,
		Groups: []string{"system:serviceaccounts", fmt.Sprintf("system:serviceaccounts:%s", ns), "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)
	return c
}
