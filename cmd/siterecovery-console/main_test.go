package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// console is the binary's run, started on a free loopback port.
type console struct {
	addr string
	log  *lockedBuffer
	done chan int
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// apiServer is a real quorum API server, the flags that point the console at
// it, and a token it accepts.
func apiServer(t *testing.T) (flags []string, token string) {
	t.Helper()
	z := harness.Start(t, harness.Options{Scheme: scheme.New(), CRDDirectoryPaths: []string{}}, "quorum")
	c := z.Clusters["quorum"]
	ca := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(ca, c.Config.CAData, 0o600))
	ctx := context.Background()
	require.NoError(t, c.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "viewer"}}))
	token, err := harness.ServiceAccountToken(ctx, c.Client, "default", "viewer", time.Hour)
	require.NoError(t, err)
	return []string{"--api-server=" + c.Config.Host, "--api-ca-file=" + ca, "--namespaces=default"}, token
}

// start runs the console with args until the test ends.
func start(t *testing.T, args ...string) *console {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &console{log: &lockedBuffer{}, done: make(chan int, 1)}
	ready := make(chan net.Addr, 1)
	go func() {
		c.done <- run(ctx, append([]string{"--listen=127.0.0.1:0"}, args...), c.log, func(a net.Addr) { ready <- a })
	}()
	select {
	case a := <-ready:
		c.addr = a.String()
	case code := <-c.done:
		cancel()
		t.Fatalf("the console exited with %d before serving:\n%s", code, c.log.String())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the console did not start serving within 30s")
	}
	t.Cleanup(func() {
		cancel()
		<-c.done
	})
	return c
}

// signIn posts token to /api/login and returns the reply's status and cookies.
func signIn(t *testing.T, hc *http.Client, base, token string) (int, []string) {
	t.Helper()
	resp, err := hc.Post(base+"/api/login", "application/json", strings.NewReader(`{"token":"`+token+`"}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Values("Set-Cookie")
}

// TestServesHTTPSByDefault starts the console as the chart did before this
// change (no TLS flag at all): it must answer only over HTTPS, with an ECDSA
// P-256 certificate of its own for its names, and give a signed-in browser a
// Secure, __Host- session cookie. A browser speaking plain HTTP, where a
// token would cross the network in clear text, gets no console.
func TestServesHTTPSByDefault(t *testing.T) {
	flags, token := apiServer(t)
	c := start(t, flags...)

	plain := &http.Client{Timeout: 10 * time.Second}
	resp, err := plain.Get("http://" + c.addr + "/healthz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(body), "HTTP request to an HTTPS server")
	code, _ := signIn(t, plain, "http://"+c.addr, token)
	assert.Equal(t, http.StatusBadRequest, code, "a token posted in clear text reaches no sign-in")

	// Read the certificate the console made, then trust exactly it.
	conn, err := tls.Dial("tcp", c.addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only to read the certificate
	require.NoError(t, err)
	leaf := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	key, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	require.True(t, ok, "the key is ECDSA, not %T", leaf.PublicKey)
	assert.Equal(t, elliptic.P256(), key.Curve)
	assert.Contains(t, leaf.DNSNames, "localhost")
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, err = hc.Get("https://" + c.addr + "/healthz")
	require.NoError(t, err, "the certificate is valid for 127.0.0.1")
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "max-age=31536000", resp.Header.Get("Strict-Transport-Security"))

	code, cookies := signIn(t, hc, "https://"+c.addr, token)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, cookies, 1)
	assert.True(t, strings.HasPrefix(cookies[0], "__Host-siterecovery-console="), cookies[0])
	assert.Contains(t, cookies[0], "; Secure")
	assert.Contains(t, c.log.String(), "self-signed certificate generated at start")
}

// TestPlainHTTPNeedsTheExplicitFlag: --insecure-http serves plain HTTP, with
// a cookie that is not Secure, and says so with a warning; contradictory TLS
// flags stop the console before it serves anything.
func TestPlainHTTPNeedsTheExplicitFlag(t *testing.T) {
	flags, token := apiServer(t)
	c := start(t, append(flags, "--insecure-http")...)
	hc := &http.Client{Timeout: 10 * time.Second}
	code, cookies := signIn(t, hc, "http://"+c.addr, token)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, cookies, 1)
	assert.True(t, strings.HasPrefix(cookies[0], "siterecovery-console="), cookies[0])
	assert.NotContains(t, cookies[0], "Secure")
	assert.Contains(t, c.log.String(), `"level":"WARN","msg":"serving plain HTTP (--insecure-http): sign-in tokens cross the network in clear text`)

	for _, bad := range [][]string{
		{"--insecure-http", "--behind-tls-proxy"},
		{"--insecure-http", "--tls-cert-file=/x.crt", "--tls-key-file=/x.key"},
		{"--tls-cert-file=/x.crt"},
		{"--tls-san="},
	} {
		var log lockedBuffer
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		code := run(ctx, append(append([]string{"--listen=127.0.0.1:0"}, flags...), bad...), &log, func(net.Addr) { t.Errorf("%v: the console served", bad) })
		cancel()
		assert.Equal(t, 2, code, "%v: %s", bad, log.String())
	}
}
