package remote

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

// ErrKubeconfigNotAllowed is returned for kubeconfigs that would make
// quorum-manager run a program, use an auth plugin, or read files from its own
// filesystem: a Secret must carry the credential itself.
var ErrKubeconfigNotAllowed = errors.New("kubeconfig not allowed")

// Limits bound how hard quorum-manager talks to one cluster.
type Limits struct {
	QPS     float32
	Burst   int
	Timeout time.Duration
}

// RESTConfig turns kubeconfig bytes into a rest.Config with explicit limits. Its
// errors never contain the kubeconfig's content.
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
	cfg.UserAgent = "siterecovery-quorum-manager"
	return cfg, nil
}

func checkAllowed(raw *clientcmdapi.Config) error {
	names := make([]string, 0, len(raw.AuthInfos))
	for name := range raw.AuthInfos {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		a := raw.AuthInfos[name]
		switch {
		case a.Exec != nil:
			return fmt.Errorf("%w: user %q uses an exec credential plugin; use a token or client certificate", ErrKubeconfigNotAllowed, name)
		case a.AuthProvider != nil:
			return fmt.Errorf("%w: user %q uses an auth-provider; use a token or client certificate", ErrKubeconfigNotAllowed, name)
		case a.TokenFile != "" || a.ClientCertificate != "" || a.ClientKey != "":
			return fmt.Errorf("%w: user %q refers to files; embed token or client-certificate-data/client-key-data", ErrKubeconfigNotAllowed, name)
		}
	}
	for name, c := range raw.Clusters {
		if c.CertificateAuthority != "" {
			return fmt.Errorf("%w: cluster %q refers to a CA file; embed certificate-authority-data", ErrKubeconfigNotAllowed, name)
		}
	}
	return nil
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
