package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/console/server"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

const (
	drNamespace = "dr-production"
	groupName   = "production-pg"
)

// quorum is one real API server with a DR namespace, a zone, a group, and
// two service accounts bound to a viewer and an operator role.
type quorum struct {
	t       *testing.T
	cluster *harness.Cluster
	admin   client.Client
	tokens  map[string]string
	srv     *httptest.Server
	console *server.Server
	log     *syncBuffer
	clock   *clock
	// sites are the workload clusters started with the quorum, by name.
	sites map[string]*harness.Cluster
}

type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startQuorum starts the quorum API server, and beside it the named workload
// clusters (none for tests of the console alone).
func startQuorum(t *testing.T, o server.Options, sites ...string) *quorum {
	t.Helper()
	return startQuorumWith(t, harness.Options{}, o, sites...)
}

// startQuorumWith is startQuorum with harness options (extra API server flags).
func startQuorumWith(t *testing.T, ho harness.Options, o server.Options, sites ...string) *quorum {
	t.Helper()
	ho.Scheme = scheme.New()
	z := harness.Start(t, ho, append([]string{"quorum"}, sites...)...)
	c := z.Clusters["quorum"]
	q := &quorum{t: t, cluster: c, admin: c.Client, tokens: map[string]string{}, log: &syncBuffer{}, clock: &clock{},
		sites: map[string]*harness.Cluster{}}
	for _, name := range sites {
		q.sites[name] = z.Clusters[name]
	}
	ctx := context.Background()
	q.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: drNamespace}})
	q.create(&srv1alpha1.ProtectionZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: "production"},
		Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
			{Name: "primary-cluster", Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "primary-kubeconfig"}},
			{Name: "dr-cluster", Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "dr-kubeconfig"}},
		}},
	})
	q.create(&srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: groupName},
		Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: "primary-cluster", ZoneRef: &srv1alpha1.LocalObjectReference{Name: "production"},
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Name: "vm-00", Namespace: "apps"}, {Name: "vm-01", Namespace: "apps"}},
			Replication:     srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: 60}},
	})
	read := []string{"get", "list", "watch"}
	q.role("viewer", rbacv1.PolicyRule{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: read})
	q.role("operator",
		rbacv1.PolicyRule{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: read},
		rbacv1.PolicyRule{APIGroups: []string{srv1alpha1.GroupVersion.Group},
			Resources: []string{"failoverrequests", "testfailovers", "protectionrequests"}, Verbs: []string{"create"}})
	// A user with no role at all: signs in, sees nothing.
	q.role("stranger")
	_ = ctx

	if o.Namespaces == nil {
		o.Namespaces = []string{drNamespace}
	}
	o.API, o.Scheme, o.Now = c.Config, scheme.New(), q.clock.now
	o.Log = slog.New(slog.NewJSONHandler(q.log, nil))
	q.console = server.New(o)
	q.srv = httptest.NewServer(q.console)
	t.Cleanup(q.srv.Close)
	return q
}

// startQuorumBeside serves a second console, with options o, over the API
// server of q, with q's users.
func startQuorumBeside(t *testing.T, q *quorum, o server.Options) *quorum {
	t.Helper()
	n := &quorum{t: t, cluster: q.cluster, admin: q.admin, tokens: q.tokens, log: &syncBuffer{}, clock: q.clock, sites: q.sites}
	if o.Namespaces == nil {
		o.Namespaces = []string{drNamespace}
	}
	o.API, o.Scheme, o.Now = q.cluster.Config, scheme.New(), q.clock.now
	o.Log = slog.New(slog.NewJSONHandler(n.log, nil))
	n.console = server.New(o)
	n.srv = httptest.NewServer(n.console)
	t.Cleanup(n.srv.Close)
	return n
}

func (q *quorum) create(obj client.Object) {
	q.t.Helper()
	require.NoError(q.t, q.admin.Create(context.Background(), obj))
}

// role creates a service account bound to a namespaced role with rules, and
// keeps a token of it.
func (q *quorum) role(name string, rules ...rbacv1.PolicyRule) {
	q.t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: name}}
	q.create(sa)
	if len(rules) > 0 {
		q.create(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: name}, Rules: rules})
		q.create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: drNamespace, Name: name}}})
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	require.NoError(q.t, q.admin.SubResource("token").Create(ctx, sa, tr))
	q.tokens[name] = tr.Status.Token
}

// browser is a client with a cookie jar, as a browser tab would be; it keeps
// everything it received so that tests can look for leaked tokens.
type browser struct {
	t    *testing.T
	base string
	hc   *http.Client
	csrf string
	seen *strings.Builder
}

func (q *quorum) browser() *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(q.t, err)
	return &browser{t: q.t, base: q.srv.URL, hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}, seen: &strings.Builder{}}
}

type reply struct {
	code   int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.body, v), string(r.body))
}

func (b *browser) do(method, path string, body any, header map[string]string) reply {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(b.t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	require.NoError(b.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.hc.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	for k, v := range resp.Header {
		b.seen.WriteString(k + ": " + strings.Join(v, ",") + "\n")
	}
	b.seen.Write(data)
	return reply{code: resp.StatusCode, header: resp.Header, body: data}
}

func (b *browser) get(path string) reply { return b.do(http.MethodGet, path, nil, nil) }

// post sends a write with the session's CSRF token.
func (b *browser) post(path string, body any) reply {
	return b.do(http.MethodPost, path, body, map[string]string{"X-CSRF-Token": b.csrf})
}

func (b *browser) login(token string) reply {
	b.t.Helper()
	r := b.do(http.MethodPost, "/api/login", map[string]string{"token": token}, nil)
	if r.code == http.StatusOK {
		var s struct {
			CSRF string `json:"csrfToken"`
		}
		r.json(b.t, &s)
		b.csrf = s.CSRF
	}
	return r
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}
