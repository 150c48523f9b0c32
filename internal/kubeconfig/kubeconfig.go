package kubeconfig

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ErrNotAllowed is returned for kubeconfigs that would make the reader run a
// program, use an auth plugin, or read files from its own filesystem: a Secret
// must carry the credential itself.
var ErrNotAllowed = errors.New("kubeconfig not allowed")

// Limits bound how hard a client talks to one cluster.
type Limits struct {
	QPS     float32
	Burst   int
	Timeout time.Duration
}

// RESTConfig turns kubeconfig bytes into a rest.Config with explicit limits and
// no user agent (each binary sets its own). Its errors never contain the
// kubeconfig's content.
func RESTConfig(data []byte, limits Limits) (*rest.Config, error) {
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, errors.New("kubeconfig cannot be parsed as YAML kubeconfig")
	}
	if err := checkAllowed(raw); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		// clientcmd's messages name clusters and contexts, never credentials.
		return nil, fmt.Errorf("kubeconfig is incomplete: %s", redact(err.Error()))
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = limits.QPS, limits.Burst, limits.Timeout
	return cfg, nil
}

// Check applies the rules RESTConfig applies, without building a config: the
// admission webhook refuses a Secret that quorum-manager would refuse at connect
// time. Its errors never contain the kubeconfig's content.
func Check(data []byte) error {
	_, err := RESTConfig(data, Limits{})
	return err
}

// checkAllowed refuses what would let a kubeconfig Secret open a hole: a program
// or plugin to run, files of the reader's own filesystem, a connection that is
// not verified TLS, a password, a proxy, or acting as someone else. Every entry is
// checked, not only the current context's, so that switching contexts later cannot
// bring a refused entry into use.
func checkAllowed(raw *clientcmdapi.Config) error {
	for _, name := range sortedKeys(raw.AuthInfos) {
		if err := checkUser(name, raw.AuthInfos[name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(raw.Clusters) {
		if err := checkCluster(name, raw.Clusters[name]); err != nil {
			return err
		}
	}
	return checkCredentials(raw)
}

func checkUser(name string, a *clientcmdapi.AuthInfo) error {
	switch {
	case a.Exec != nil:
		return fmt.Errorf("%w: user %q uses an exec credential plugin; use a token or client certificate", ErrNotAllowed, name)
	case a.AuthProvider != nil:
		return fmt.Errorf("%w: user %q uses an auth-provider; use a token or client certificate", ErrNotAllowed, name)
	case a.TokenFile != "" || a.ClientCertificate != "" || a.ClientKey != "":
		return fmt.Errorf("%w: user %q refers to files; embed token or client-certificate-data/client-key-data", ErrNotAllowed, name)
	case a.Username != "" || a.Password != "":
		return fmt.Errorf("%w: user %q uses basic auth (username/password); use a ServiceAccount token or a client certificate", ErrNotAllowed, name)
	case a.Impersonate != "" || a.ImpersonateUID != "" || len(a.ImpersonateGroups) > 0 || len(a.ImpersonateUserExtra) > 0:
		return fmt.Errorf("%w: user %q impersonates another identity (as/as-groups/as-uid/as-user-extra); give the identity's own credentials instead", ErrNotAllowed, name)
	}
	return nil
}

func checkCluster(name string, c *clientcmdapi.Cluster) error {
	switch {
	case c.CertificateAuthority != "":
		return fmt.Errorf("%w: cluster %q refers to a CA file; embed certificate-authority-data", ErrNotAllowed, name)
	case c.InsecureSkipTLSVerify:
		return fmt.Errorf("%w: cluster %q sets insecure-skip-tls-verify; remove it and embed the API server's CA as certificate-authority-data", ErrNotAllowed, name)
	case c.ProxyURL != "":
		return fmt.Errorf("%w: cluster %q sets proxy-url; siterecovery connects to the API server directly", ErrNotAllowed, name)
	case !strings.HasPrefix(strings.ToLower(c.Server), "https://"):
		return fmt.Errorf("%w: cluster %q has server %q; use the API server's https:// address", ErrNotAllowed, name, c.Server)
	}
	return nil
}

// checkCredentials refuses a current context whose user carries no credential:
// the reader would connect anonymously.
func checkCredentials(raw *clientcmdapi.Config) error {
	ctx, ok := raw.Contexts[raw.CurrentContext]
	if !ok {
		return nil // clientcmd reports the missing context.
	}
	a, ok := raw.AuthInfos[ctx.AuthInfo]
	if !ok || (a.Token == "" && len(a.ClientCertificateData) == 0) {
		return fmt.Errorf("%w: user %q of context %q has no credentials; embed a token or client-certificate-data/client-key-data", ErrNotAllowed, ctx.AuthInfo, raw.CurrentContext)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// redact drops anything after "token" or "password" in an error message, in case
// a library ever echoes one.
func redact(msg string) string {
	lower := strings.ToLower(msg)
	for _, word := range []string{"token", "password", "bearer"} {
		if i := strings.Index(lower, word); i >= 0 {
			return msg[:i] + "[redacted]"
		}
	}
	return msg
}
