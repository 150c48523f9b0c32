package kubeconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const kubeconfigTemplate = `
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: "Y2E="}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
users:
- name: u
  user:
`

func TestRESTConfigRefusesPluginsAndFiles(t *testing.T) {
	for _, tc := range []struct{ name, user, want string }{
		{"exec plugin", "    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}\n", "exec credential plugin"},
		{"auth provider", "    auth-provider: {name: oidc, config: {id-token: s3cret}}\n", "auth-provider"},
		{"token file", "    tokenFile: /var/run/token\n", "refers to files"},
		{"client cert file", "    client-certificate: /etc/cert\n    client-key: /etc/key\n", "refers to files"},
		{"basic auth", "    username: admin\n    password: s3cret\n", "basic auth"},
		{"impersonation", "    token: s3cret\n    as: system:admin\n", "impersonates"},
		{"impersonated groups", "    token: s3cret\n    as-groups: [system:masters]\n", "impersonates"},
		{"no credentials", "    {}\n", "has no credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RESTConfig([]byte(kubeconfigTemplate+tc.user), Limits{})
			require.ErrorIs(t, err, ErrNotAllowed)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "s3cret")
		})
	}
}

func TestRESTConfigRefusesUnverifiedConnections(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"insecure", `certificate-authority-data: "Y2E="`, `insecure-skip-tls-verify: true`, "insecure-skip-tls-verify"},
		{"plain http", `"https://127.0.0.1:6443"`, `"http://127.0.0.1:6443"`, "https:// address"},
		{"proxy", `certificate-authority-data: "Y2E="`, `certificate-authority-data: "Y2E=", proxy-url: "http://proxy:3128"`, "proxy-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := strings.Replace(kubeconfigTemplate, tc.from, tc.to, 1) + "    token: s3cret\n"
			require.NotEqual(t, kubeconfigTemplate+"    token: s3cret\n", kc, "the case must change the template")
			err := Check([]byte(kc))
			require.ErrorIs(t, err, ErrNotAllowed)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "s3cret")
		})
	}
}

func TestRESTConfigAppliesLimits(t *testing.T) {
	cfg, err := RESTConfig([]byte(kubeconfigTemplate+"    token: s3cret\n"), Limits{QPS: 7, Burst: 9, Timeout: 3 * time.Second})
	require.NoError(t, err)
	require.Equal(t, float32(7), cfg.QPS)
	require.Equal(t, 9, cfg.Burst)
	require.Equal(t, 3*time.Second, cfg.Timeout)
	require.Equal(t, "s3cret", cfg.BearerToken)
}

func TestRESTConfigGarbage(t *testing.T) {
	_, err := RESTConfig([]byte("token: s3cret\n\t:::"), Limits{})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cret")
}
