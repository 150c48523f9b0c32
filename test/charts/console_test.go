package charts

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/siterecovery/siterecovery/test/chartrender"
)

// consolePod returns the console container's args and the pod's volumes.
func consolePod(t *testing.T, values map[string]any) ([]string, []any) {
	t.Helper()
	objs, err := chartrender.RenderValues("quorum-control-plane", "dr-production", values)
	require.NoError(t, err)
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetLabels()["app.kubernetes.io/component"] != "console" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		volumes, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
		var args []string
		for _, a := range containers[0].(map[string]any)["args"].([]any) {
			args = append(args, a.(string))
		}
		return args, volumes
	}
	t.Fatal("no console Deployment rendered")
	return nil, nil
}

// TestConsolePrometheusIsOptional checks that the console asks Prometheus
// for lag history only when the chart names it, with its token and CA
// mounted from the named Secret and ConfigMap.
func TestConsolePrometheusIsOptional(t *testing.T) {
	args, volumes := consolePod(t, nil)
	for _, a := range args {
		require.NotContains(t, a, "--prometheus", "no Prometheus flag without console.prometheus.url")
	}
	require.Len(t, volumes, 1, "only the API server's CA is mounted")

	args, volumes = consolePod(t, map[string]any{"console": map[string]any{"prometheus": map[string]any{
		"url":         "https://prometheus.monitoring:9090",
		"tokenSecret": map[string]any{"name": "console-prometheus", "key": "token"},
		"caConfigMap": map[string]any{"name": "prometheus-ca", "key": "ca.crt"},
	}}})
	require.Subset(t, args, []string{
		"--prometheus-url=https://prometheus.monitoring:9090",
		"--prometheus-token-file=/etc/siterecovery-console/prometheus-token/token",
		"--prometheus-ca-file=/etc/siterecovery-console/prometheus-ca/ca.crt",
	})
	names := map[string]bool{}
	for _, v := range volumes {
		names[v.(map[string]any)["name"].(string)] = true
	}
	require.Equal(t, map[string]bool{"api-ca": true, "prometheus-token": true, "prometheus-ca": true}, names)
}

// TestConsoleOIDCIsOptional checks that the console offers OIDC sign-in only
// when the chart names an issuer, with the client secret and the issuer's CA
// mounted from the named Secret and ConfigMap (the secret never in an arg).
func TestConsoleOIDCIsOptional(t *testing.T) {
	args, _ := consolePod(t, nil)
	for _, a := range args {
		require.NotContains(t, a, "--oidc", "no OIDC flag without console.oidc.issuerURL")
	}

	args, volumes := consolePod(t, map[string]any{"console": map[string]any{"oidc": map[string]any{
		"issuerURL":          "https://issuer.example",
		"clientID":           "siterecovery-console",
		"clientSecretSecret": map[string]any{"name": "console-oidc", "key": "secret"},
		"caConfigMap":        map[string]any{"name": "issuer-ca", "key": "ca.crt"},
		"usernameClaim":      "preferred_username",
	}}})
	require.Subset(t, args, []string{
		"--oidc-issuer-url=https://issuer.example",
		"--oidc-client-id=siterecovery-console",
		"--oidc-scopes=email,groups,offline_access",
		"--oidc-username-claim=preferred_username",
		"--oidc-client-secret-file=/etc/siterecovery-console/oidc-secret/secret",
		"--oidc-ca-file=/etc/siterecovery-console/oidc-ca/ca.crt",
	})
	names := map[string]bool{}
	for _, v := range volumes {
		names[v.(map[string]any)["name"].(string)] = true
	}
	require.Equal(t, map[string]bool{"api-ca": true, "oidc-secret": true, "oidc-ca": true}, names)

	_, err := chartrender.RenderValues("quorum-control-plane", "dr-production", map[string]any{"console": map[string]any{
		"oidc": map[string]any{"issuerURL": "https://issuer.example"}}})
	require.ErrorContains(t, err, "console.oidc.clientID is required")
}
