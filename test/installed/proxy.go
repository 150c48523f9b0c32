package installed

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"

	"github.com/siterecovery/siterecovery/test/harness"
)

// VersionProxy fronts a harness API server for helm, kubectl and
// bootstrap-zone.sh. The harness builds kube-apiserver from the module proxy
// without the release's version stamp, so its /version reads v0.0.0-master,
// which the charts' kubeVersion (>=1.30) refuses, as helm checks it on
// install. The proxy answers /version with the release the binary was built
// from and passes everything else through: a request with its own
// Authorization (a minted token) as it is, and one with the proxy's own admin
// token (the admin kubeconfig's client certificate cannot pass a proxy) with
// the admin certificate.
type VersionProxy struct {
	srv *httptest.Server
	// Kubeconfig is an admin kubeconfig of the proxy: its CA and admin token.
	Kubeconfig []byte
}

// NewVersionProxy starts a proxy in front of the API server of admin, named
// name in its kubeconfig; logf reports the requests it could not pass.
func NewVersionProxy(name string, admin *rest.Config, logf func(format string, args ...any)) (*VersionProxy, error) {
	target, err := url.Parse(admin.Host)
	if err != nil {
		return nil, err
	}
	asAdmin, err := rest.TransportFor(admin)
	if err != nil {
		return nil, err
	}
	asCaller, err := rest.TransportFor(rest.AnonymousClientConfig(admin))
	if err != nil {
		return nil, err
	}
	adminToken := rand.Text()
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = target.Host },
		FlushInterval: -1, // watches stream
		// A site's power cut ends the watches it streams midway; the proxy
		// would log each to stderr ("read error during body copy").
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			logf("proxy of %s: %s %s: %v", name, r.Method, r.URL, err)
			w.WriteHeader(http.StatusBadGateway)
		},
		Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.Header.Get("Authorization") == "Bearer "+adminToken {
				r.Header.Del("Authorization")
				return asAdmin.RoundTrip(r)
			}
			return asCaller.RoundTrip(r)
		}),
	}
	v := strings.TrimPrefix(harness.KubeVersion, "v")
	parts := strings.SplitN(v, ".", 3)
	info, err := json.Marshal(version.Info{Major: parts[0], Minor: parts[1], GitVersion: harness.KubeVersion, Platform: "linux/amd64"})
	if err != nil {
		return nil, err
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(info)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	// A partition cut in front of the proxy (the sandbox's links) ends
	// handshakes midway; the server would log each to stderr.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc := fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority-data: %[3]s
users:
- name: admin
  user:
    token: %[4]s
contexts:
- name: %[1]s
  context: {cluster: %[1]s, user: admin}
current-context: %[1]s
`, name, srv.URL, base64.StdEncoding.EncodeToString(ca), adminToken)
	return &VersionProxy{srv: srv, Kubeconfig: kc}, nil
}

// Address is the proxy's host:port.
func (p *VersionProxy) Address() string { return p.srv.Listener.Addr().String() }

// Close stops the proxy.
func (p *VersionProxy) Close() { p.srv.Close() }

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
