package console_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/console/listen"
)

// serveHTTPS serves h over HTTPS, as the console serves by default: with a
// self-signed ECDSA P-256 certificate made at start (the console's own
// listen.SelfSignedCertificate) for the loopback address. The browser is
// started with ignore-certificate-errors to accept it, as a user accepts it
// once; the console's handler must be built with Options.TLS, which makes
// its cookies Secure and __Host- prefixed. It returns the https:// URL.
func serveHTTPS(t *testing.T, h http.Handler) string {
	t.Helper()
	cert, err := listen.SelfSignedCertificate([]string{"127.0.0.1", "localhost"}, time.Now())
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}
