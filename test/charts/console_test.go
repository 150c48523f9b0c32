package charts

import (
	"encoding/json"
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

// consoleObjects renders the chart and returns the console's Deployment and
// Service.
func consoleObjects(t *testing.T, values map[string]any) (deploy, svc *unstructured.Unstructured) {
	t.Helper()
	objs, err := chartrender.RenderValues("quorum-control-plane", "dr-production", values)
	require.NoError(t, err)
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment" && o.GetLabels()["app.kubernetes.io/component"] == "console":
			deploy = o
		case o.GetKind() == "Service" && o.GetName() == "siterecovery-console-dr-production":
			svc = o
		}
	}
	require.NotNil(t, deploy)
	require.NotNil(t, svc)
	return deploy, svc
}

// TestConsoleServesHTTPSByDefault: with no TLS value the console makes its
// own certificate for its Service's names and is probed over HTTPS; plain
// HTTP needs console.tls.mode=disabled (or proxy, behind a TLS-terminating
// proxy), and values that would leave a given certificate unused fail.
func TestConsoleServesHTTPSByDefault(t *testing.T) {
	scheme := func(d *unstructured.Unstructured) (string, string) {
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		c := containers[0].(map[string]any)
		port := c["ports"].([]any)[0].(map[string]any)["name"].(string)
		s, _, _ := unstructured.NestedString(c, "readinessProbe", "httpGet", "scheme")
		l, _, _ := unstructured.NestedString(c, "livenessProbe", "httpGet", "scheme")
		require.Equal(t, s, l)
		return port, s
	}
	servicePort := func(s *unstructured.Unstructured) string {
		ports, _, _ := unstructured.NestedSlice(s.Object, "spec", "ports")
		return ports[0].(map[string]any)["targetPort"].(string)
	}

	args, _ := consolePod(t, nil)
	require.Contains(t, args, "--tls-san=siterecovery-console-dr-production,siterecovery-console-dr-production.dr-production,"+
		"siterecovery-console-dr-production.dr-production.svc,siterecovery-console-dr-production.dr-production.svc.cluster.local,localhost")
	require.Contains(t, args, "--max-streams-per-session=4")
	for _, a := range args {
		require.NotContains(t, a, "--insecure-http")
		require.NotContains(t, a, "--trusted-proxies", "no proxy is trusted by default")
	}
	d, s := consoleObjects(t, nil)
	port, probe := scheme(d)
	require.Equal(t, "https", port)
	require.Equal(t, "HTTPS", probe)
	require.Equal(t, "https", servicePort(s))

	args, _ = consolePod(t, map[string]any{"console": map[string]any{"tls": map[string]any{"extraSANs": []any{"console.example.com"}}}})
	require.Contains(t, args, "--tls-san=siterecovery-console-dr-production,siterecovery-console-dr-production.dr-production,"+
		"siterecovery-console-dr-production.dr-production.svc,siterecovery-console-dr-production.dr-production.svc.cluster.local,localhost,console.example.com")

	disabled := map[string]any{"console": map[string]any{"tls": map[string]any{"mode": "disabled"}}}
	args, _ = consolePod(t, disabled)
	require.Contains(t, args, "--insecure-http")
	d, s = consoleObjects(t, disabled)
	port, probe = scheme(d)
	require.Equal(t, "http", port)
	require.Equal(t, "HTTP", probe)
	require.Equal(t, "http", servicePort(s))

	args, _ = consolePod(t, map[string]any{"console": map[string]any{"tls": map[string]any{"mode": "proxy"}}})
	require.Contains(t, args, "--behind-tls-proxy")

	secret := map[string]any{"console": map[string]any{"tls": map[string]any{"mode": "secret", "secretName": "console-tls"}}}
	args, volumes := consolePod(t, secret)
	require.Subset(t, args, []string{"--tls-cert-file=/etc/siterecovery-console/tls/tls.crt", "--tls-key-file=/etc/siterecovery-console/tls/tls.key"})
	require.Len(t, volumes, 2)
	d, _ = consoleObjects(t, secret)
	_, probe = scheme(d)
	require.Equal(t, "HTTPS", probe)

	args, _ = consolePod(t, map[string]any{"console": map[string]any{"trustedProxies": []any{"10.0.0.0/8"}, "clientAddressHeader": "Forwarded"}})
	require.Subset(t, args, []string{"--trusted-proxies=10.0.0.0/8", "--client-address-header=Forwarded"})

	for values, want := range map[string]string{
		`{"secretName": "console-tls"}`: "set console.tls.mode=secret to serve it",
		`{"mode": "secret"}`:            "console.tls.mode=secret needs console.tls.secretName",
		`{"terminatedByProxy": true}`:   "replaced by console.tls.mode=proxy",
		`{"mode": "plain"}`:             "use selfSigned, secret, proxy or disabled",
	} {
		var tlsValues map[string]any
		require.NoError(t, json.Unmarshal([]byte(values), &tlsValues))
		_, err := chartrender.RenderValues("quorum-control-plane", "dr-production", map[string]any{"console": map[string]any{"tls": tlsValues}})
		require.ErrorContains(t, err, want, values)
	}
}
