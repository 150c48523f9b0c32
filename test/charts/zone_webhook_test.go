package charts

import (
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestZoneWebhookHasNoClusterWideReads states what a reviewer of the
// protectionzone chart relies on: its cluster-wide ProtectionZone webhook can
// write only its own certificate Secret and webhook configuration, and reads a
// DR namespace's Secrets only where that namespace's quorum-control-plane
// release binds the reader role.
func TestZoneWebhookHasNoClusterWideReads(t *testing.T) {
	objs := renderValues(t, "protectionzone", "siterecovery-system", nil)
	const sa = "siterecovery-zone-webhook"
	for _, obj := range objs {
		if obj.GetKind() != "ClusterRoleBinding" && obj.GetKind() != "RoleBinding" {
			continue
		}
		b := &rbacv1.RoleBinding{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, b))
		for _, s := range b.Subjects {
			if s.Name != sa {
				continue
			}
			r := find(objs, b.RoleRef.Kind, obj.GetNamespace(), b.RoleRef.Name)
			require.NotNil(t, r, "%s %s", b.RoleRef.Kind, b.RoleRef.Name)
			role := &rbacv1.ClusterRole{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(r.Object, role))
			for _, rule := range role.Rules {
				for _, res := range rule.Resources {
					if obj.GetKind() == "ClusterRoleBinding" {
						require.Equal(t, "validatingwebhookconfigurations", res, "cluster-wide the zone webhook only keeps its caBundle current")
					}
					if res == "secrets" && rule.ResourceNames == nil {
						require.Equal(t, "siterecovery-system", obj.GetNamespace(), "Secrets are read only in its own namespace")
					}
				}
				if len(rule.Verbs) > 0 && rule.Resources[0] == "validatingwebhookconfigurations" && len(rule.ResourceNames) == 0 {
					require.Subset(t, []string{"get", "list", "watch"}, rule.Verbs)
				}
			}
		}
	}
	reader := find(objs, "ClusterRole", "", "siterecovery-zone-webhook-reader")
	require.NotNil(t, reader)
	for _, obj := range objs {
		if obj.GetKind() == "ClusterRoleBinding" {
			b := &rbacv1.ClusterRoleBinding{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, b))
			require.NotEqual(t, "siterecovery-zone-webhook-reader", b.RoleRef.Name, "the reader role is bound per DR namespace only")
		}
	}

	grant := find(renderValues(t, "quorum-control-plane", "dr-production", nil), "RoleBinding", "dr-production", "quorum-manager-dr-production-zone-webhook")
	require.NotNil(t, grant, "the quorum chart grants the zone webhook reads in its DR namespace")
	b := &rbacv1.RoleBinding{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(grant.Object, b))
	require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "siterecovery-zone-webhook-reader"}, b.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "siterecovery-system"}}, b.Subjects)
	require.Nil(t, find(renderValues(t, "quorum-control-plane", "dr-production", map[string]any{"zoneWebhook": map[string]any{"grantAccess": false}}),
		"RoleBinding", "dr-production", "quorum-manager-dr-production-zone-webhook"))
}

// TestWebhooksWithCertManager renders each chart's webhooks in cert-manager
// mode: a Certificate for the Service's DNS name, the CA injection annotation
// on the configuration, the Secret mounted read-only, and no self-managed
// certificate Secret or rights to write one.
func TestWebhooksWithCertManager(t *testing.T) {
	for _, c := range []struct{ chart, namespace, key, config, service string }{
		{"quorum-control-plane", "dr-production", "webhooks", "quorum-manager-dr-production", "quorum-manager-dr-production-webhook"},
		{"protectionzone", "siterecovery-system", "zoneWebhook", "siterecovery-zone-webhook", "siterecovery-zone-webhook"},
	} {
		t.Run(c.chart, func(t *testing.T) {
			objs := renderValues(t, c.chart, c.namespace, map[string]any{c.key: map[string]any{"certificates": "cert-manager"}})
			cert := find(objs, "Certificate", c.namespace, c.service)
			require.NotNil(t, cert, "a cert-manager Certificate")
			dns, _, _ := unstructured.NestedSlice(cert.Object, "spec", "dnsNames")
			require.Equal(t, []any{c.service + "." + c.namespace + ".svc"}, dns)
			var cfg map[string]string
			for _, obj := range objs {
				if obj.GetKind() == "ValidatingWebhookConfiguration" {
					cfg = obj.GetAnnotations()
				}
			}
			require.Equal(t, c.namespace+"/"+c.service, cfg["cert-manager.io/inject-ca-from"])
			require.Nil(t, find(objs, "Secret", c.namespace, c.service+"-cert"), "cert-manager writes the Secret")
			for _, obj := range objs {
				require.NotContains(t, obj.GetName(), "webhook-cert", "no rights to write a self-managed certificate")
			}
		})
	}
}
