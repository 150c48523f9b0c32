package listen

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"
)

// Mode is how the console is served.
type Mode string

const (
	// SelfSigned serves HTTPS with a certificate generated at start.
	SelfSigned Mode = "self-signed"
	// CertFiles serves HTTPS with the operator's certificate and key.
	CertFiles Mode = "cert-files"
	// TLSProxy serves plain HTTP to a proxy that terminates TLS.
	TLSProxy Mode = "tls-proxy"
	// InsecureHTTP serves plain HTTP end to end.
	InsecureHTTP Mode = "insecure-http"
)

// Config is what the console's flags say about serving.
type Config struct {
	// CertFile and KeyFile are a PEM certificate and its key.
	CertFile, KeyFile string
	// BehindTLSProxy serves plain HTTP to a TLS-terminating proxy.
	BehindTLSProxy bool
	// Insecure serves plain HTTP: the explicit opt-out of TLS.
	Insecure bool
	// Names are the DNS names and IP addresses a self-signed certificate is
	// valid for (its SANs).
	Names []string
}

// Mode is the serving mode the flags select; contradictory flags are an
// error, so that a console never serves in a mode its operator did not mean.
func (c Config) Mode() (Mode, error) {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return "", errors.New("--tls-cert-file and --tls-key-file go together")
	}
	chosen := 0
	for _, on := range []bool{c.CertFile != "", c.BehindTLSProxy, c.Insecure} {
		if on {
			chosen++
		}
	}
	if chosen > 1 {
		return "", errors.New("choose one of --tls-cert-file, --behind-tls-proxy and --insecure-http")
	}
	switch {
	case c.CertFile != "":
		return CertFiles, nil
	case c.BehindTLSProxy:
		return TLSProxy, nil
	case c.Insecure:
		return InsecureHTTP, nil
	}
	if len(c.Names) == 0 {
		return "", errors.New("a self-signed certificate needs at least one name (--tls-san)")
	}
	return SelfSigned, nil
}

// BrowserTLS reports whether browsers reach the console over HTTPS, directly
// or through a proxy: the session cookie is then Secure.
func (m Mode) BrowserTLS() bool { return m != InsecureHTTP }

// ServesTLS reports whether the console's own listener speaks TLS.
func (m Mode) ServesTLS() bool { return m == SelfSigned || m == CertFiles }

// TLSConfig is the listener's TLS configuration in mode m; nil for the
// plain-HTTP modes.
func (c Config) TLSConfig(m Mode, now time.Time) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	switch m {
	case CertFiles:
		cert, err = tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	case SelfSigned:
		cert, err = SelfSignedCertificate(c.Names, now)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
