package charts

import (
	"testing"

	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestNetworkPolicies: off by default; on, each chart's controller admits
// ingress on its webhook port from anywhere and on its metrics port from the
// selected namespaces only, and nothing else.
func TestNetworkPolicies(t *testing.T) {
	for _, c := range []struct {
		chart, namespace string
		webhook, metrics int
	}{
		{"quorum-control-plane", "dr-production", 9443, 8080},
		{"workload-control-plane", "siterecovery-system", 9443, 8080},
	} {
		t.Run(c.chart, func(t *testing.T) {
			for _, obj := range render(t, c.chart, c.namespace) {
				require.NotEqual(t, "NetworkPolicy", obj.GetKind(), "off by default")
			}
			sel := map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}
			objs := renderValues(t, c.chart, c.namespace, map[string]any{"networkPolicy": map[string]any{"enabled": true, "metricsNamespaceSelector": sel}})
			var np *networkingv1.NetworkPolicy
			for _, obj := range objs {
				if obj.GetKind() == "NetworkPolicy" {
					require.Nil(t, np, "one NetworkPolicy")
					np = &networkingv1.NetworkPolicy{}
					require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, np))
				}
			}
			require.NotNil(t, np, "no NetworkPolicy rendered")
			require.Equal(t, c.namespace, np.Namespace)
			require.NotEmpty(t, np.Spec.PodSelector.MatchLabels)
			require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes)
			require.Len(t, np.Spec.Ingress, 2)
			port := func(r networkingv1.NetworkPolicyIngressRule) int {
				require.Len(t, r.Ports, 1)
				return r.Ports[0].Port.IntValue()
			}
			require.Equal(t, c.webhook, port(np.Spec.Ingress[0]))
			require.Empty(t, np.Spec.Ingress[0].From, "the API server reaches the webhook from anywhere")
			require.Equal(t, c.metrics, port(np.Spec.Ingress[1]))
			require.Len(t, np.Spec.Ingress[1].From, 1)
			require.Equal(t, map[string]string{"kubernetes.io/metadata.name": "monitoring"}, np.Spec.Ingress[1].From[0].NamespaceSelector.MatchLabels)
		})
	}
}
