package boot

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/siterecovery/siterecovery/test/harness"
)

// With --metrics-secure, a scraper needs a token of an identity that may get
// /metrics: none is 401, a token without the role is 403, with it 200.
func TestSecureMetricsNeedAnAuthorizedToken(t *testing.T) {
	z := harness.Start(t, harness.Options{}, "quorum")
	c := z.Clusters["quorum"]
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cs := kubernetes.NewForConfigOrDie(c.Config)

	for _, sa := range []string{"scraper", "nobody"} {
		_, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		must(t, err)
	}
	_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
	must(t, err)
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scraper"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: "default"}}}, metav1.CreateOptions{})
	must(t, err)
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		must(t, err)
		return tr.Status.Token
	}

	addr := freeAddr(t)
	o := Options{MetricsAddr: addr, MetricsSecure: true}
	httpClient, err := rest.HTTPClientFor(c.Config)
	must(t, err)
	srv, err := metricsserver.NewServer(o.metricsOptions(), c.Config, httpClient)
	must(t, err)
	go func() { _ = srv.Start(ctx) }()

	get := func(bearer string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", http.NoBody)
		if err != nil {
			return 0, err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		// The endpoint serves a self-signed certificate; the chart's
		// ServiceMonitor skips verification the same way.
		cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed by design
		resp, err := cl.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}
	// Wait for the server to listen.
	must(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := get("")
		return err == nil, nil
	}))
	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token without the role", token("nobody"), http.StatusForbidden},
		{"a metrics-reader token", token("scraper"), http.StatusOK},
	} {
		got, err := get(tc.token)
		must(t, err)
		if got != tc.want {
			t.Errorf("%s: HTTP %d, want %d", tc.who, got, tc.want)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	return addr
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
