package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/console/oidc"
	"github.com/siterecovery/siterecovery/internal/console/server"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/oidcissuer"
)

const oidcClientID = "siterecovery-console"

var (
	alice = oidcissuer.User{Name: "alice", Password: "alice-password", Email: "alice@example.com"}
	bob   = oidcissuer.User{Name: "bob", Password: "bob-password", Email: "bob@example.com"}
)

// TestOIDCLogin signs in through the issuer's authorization code flow, against
// an API server that trusts the issuer: RBAC bound to the OIDC user decides
// what the console shows, the ID token is refreshed before it expires, and a
// sign-in whose state, nonce, audience or expiry is wrong is refused with a
// reason. No token the issuer handed out reaches the browser or the log.
func TestOIDCLogin(t *testing.T) {
	is := oidcissuer.Start(t, oidcissuer.Options{ClientID: oidcClientID, ClientSecret: "console-secret",
		Users: []oidcissuer.User{alice, bob}, Lifetime: 2 * time.Minute})
	var q *quorum
	provider, err := oidc.New(oidc.Config{IssuerURL: is.URL, ClientID: oidcClientID, ClientSecret: "console-secret",
		CAFile: is.CAFile, Scopes: []string{"email", "groups", "offline_access"}, UsernameClaim: "email",
		Now: func() time.Time { return q.clock.now() }})
	require.NoError(t, err)
	q = startQuorumWith(t, harness.Options{APIServerFlags: is.APIServerFlags(oidcClientID)},
		server.Options{OIDC: provider, LoginAttempts: 1000, IdleTimeout: 2 * time.Hour, AbsoluteTimeout: 8 * time.Hour})
	q.create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: "alice-viewer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "viewer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "oidc:" + alice.Email}}})
	waitAPIServerTrusts(t, q, is.IDToken(t, alice))
	var browsers []*browser

	t.Run("the login options offer OIDC", func(t *testing.T) {
		b := q.browser()
		assert.JSONEq(t, `{"oidc":true}`, string(b.get("/api/login/options").body))
	})

	t.Run("alice signs in and RBAC bound to her decides", func(t *testing.T) {
		b := oidcBrowser(t, q, is)
		browsers = append(browsers, b)
		require.Equal(t, "/", b.oidcLogin(is, alice, nil))
		var s struct{ User string }
		b.get("/api/session").json(t, &s)
		assert.Equal(t, "oidc:alice@example.com", s.User)
		var ov struct {
			Summary struct{ Groups int }
		}
		b.get("/api/overview").json(t, &ov)
		assert.Equal(t, 1, ov.Summary.Groups)
		r := b.post("/api/namespaces/"+drNamespace+"/failoverrequests",
			map[string]any{"group": groupName, "targetCluster": "dr-cluster", "type": "planned"})
		assert.Equal(t, http.StatusForbidden, r.code, "a viewer may not fail over: %s", r.body)
		assert.Contains(t, q.log.String(), `"user":"oidc:alice@example.com","action":"login oidc"`)
	})

	t.Run("bob signs in and sees no namespace", func(t *testing.T) {
		b := oidcBrowser(t, q, is)
		browsers = append(browsers, b)
		require.Equal(t, "/", b.oidcLogin(is, bob, nil))
		var ov struct{ Namespaces []any }
		b.get("/api/overview").json(t, &ov)
		assert.Empty(t, ov.Namespaces)
	})

	refusals := []struct {
		name, want string
		setup      func()
		tamper     func(*url.URL)
	}{
		{name: "a callback with another state", want: "state does not match",
			tamper: func(u *url.URL) { v := u.Query(); v.Set("state", "forged"); u.RawQuery = v.Encode() }},
		{name: "an ID token with another nonce", want: "nonce does not match",
			setup: func() { is.SetNonce(ptr.To("replayed")) }},
		{name: "an ID token for another client", want: "for another client",
			setup: func() { is.SetAudience("another-client") }},
		{name: "an expired ID token", want: "has expired",
			setup: func() { is.SetLifetime(-10 * time.Minute) }},
	}
	for _, tc := range refusals {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			is.SetNonce(nil)
			is.SetAudience("")
			is.SetLifetime(time.Hour)
			if tc.setup != nil {
				tc.setup()
			}
			t.Cleanup(func() { is.SetNonce(nil); is.SetAudience(""); is.SetLifetime(time.Hour) })
			b := oidcBrowser(t, q, is)
			browsers = append(browsers, b)
			landing := b.oidcLogin(is, alice, tc.tamper)
			u, err := url.Parse(landing)
			require.NoError(t, err)
			assert.Equal(t, "/", u.Path)
			assert.Contains(t, u.Query().Get("login_error"), tc.want)
			assert.Equal(t, http.StatusUnauthorized, b.get("/api/session").code)
		})
	}

	t.Run("an open event stream is renewed when its token is due, and the next stream refreshes it", func(t *testing.T) {
		is.SetLifetime(2 * time.Minute)
		b := oidcBrowser(t, q, is)
		browsers = append(browsers, b)
		require.Equal(t, "/", b.oidcLogin(is, alice, nil))
		before := is.Refreshes()
		old := b.stream(t)
		t.Cleanup(func() { q.clock.advance(-90 * time.Second) })

		// Past the refresh point the stream asks for a new one and ends:
		// its watches run with a token about to expire.
		q.clock.advance(90 * time.Second)
		require.Equal(t, "renew", old.next(t, 10*time.Second))
		old.ended(t, 10*time.Second)
		require.Equal(t, before, is.Refreshes(), "a stream does not refresh by itself")

		// The browser opens the next stream at once: its request refreshes
		// the token, once, and changes arrive on it.
		is.SetLifetime(time.Hour)
		next := b.stream(t)
		require.Equal(t, before+1, is.Refreshes())
		n := 0
		next.change(t, `"name":"`+groupName+`"`, func() {
			n++
			g := &srv1alpha1.ProtectionGroup{}
			require.NoError(t, q.admin.Get(context.Background(), client.ObjectKey{Namespace: drNamespace, Name: groupName}, g))
			if g.Annotations == nil {
				g.Annotations = map[string]string{}
			}
			g.Annotations["test.siterecovery.trilio.io/poke"] = strconv.Itoa(n)
			require.NoError(t, q.admin.Update(context.Background(), g))
		}, 30*time.Second)
		require.Equal(t, before+1, is.Refreshes(), "the new stream runs with the refreshed token")

		// Signing out ends the stream with "ended".
		require.Equal(t, http.StatusOK, b.post("/api/logout", nil).code)
		require.Equal(t, "ended", next.next(t, 10*time.Second))
		next.ended(t, 10*time.Second)
	})

	t.Run("the ID token is refreshed before it expires, and the session ends when it cannot be", func(t *testing.T) {
		is.SetLifetime(2 * time.Minute)
		b := oidcBrowser(t, q, is)
		browsers = append(browsers, b)
		require.Equal(t, "/", b.oidcLogin(is, alice, nil))
		before := is.Refreshes()
		t.Cleanup(func() { q.clock.advance(-(90*time.Second + 59*time.Minute)) })

		// The ID token lives two minutes: a minute before it expires the
		// console refreshes it, and the session goes on.
		is.SetLifetime(time.Hour)
		q.clock.advance(90 * time.Second)
		require.Equal(t, http.StatusOK, b.get("/api/overview").code)
		require.Equal(t, before+1, is.Refreshes())
		require.Equal(t, http.StatusOK, b.get("/api/overview").code)
		assert.Equal(t, before+1, is.Refreshes(), "a fresh token is not refreshed again")

		// When the issuer refuses the refresh, the session ends.
		is.RevokeRefreshTokens()
		q.clock.advance(59 * time.Minute)
		r := b.get("/api/overview")
		assert.Equal(t, http.StatusUnauthorized, r.code)
		assert.Contains(t, string(r.body), "sign in again")
		assert.Equal(t, http.StatusUnauthorized, b.get("/api/session").code)
	})

	t.Run("no token reaches a browser, a cookie or the log", func(t *testing.T) {
		issued := is.Issued()
		require.NotEmpty(t, issued)
		for _, b := range browsers {
			seen := b.seen.String()
			for _, c := range b.hc.Jar.Cookies(mustURL(t, q.srv.URL)) {
				seen += c.Value
			}
			for _, tok := range issued {
				require.NotContains(t, seen, tok)
			}
		}
		for _, tok := range issued {
			require.NotContains(t, q.log.String(), tok)
		}
	})
}

// waitAPIServerTrusts waits until the API server accepts the issuer's
// tokens: it loads the issuer's keys in the background after it starts.
func waitAPIServerTrusts(t *testing.T, q *quorum, token string) {
	t.Helper()
	cfg := rest.AnonymousClientConfig(q.cluster.Config)
	cfg.BearerToken = token
	cl, err := client.New(cfg, client.Options{Scheme: q.cluster.Client.Scheme()})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return cl.Create(context.Background(), &authenticationv1.SelfSubjectReview{}) == nil
	}, 2*time.Minute, 250*time.Millisecond, "the API server never accepted the issuer's ID token")
}

// oidcBrowser is a browser that trusts the issuer's certificate and follows
// no redirect by itself, so that the test sees (and may tamper with) each.
func oidcBrowser(t *testing.T, q *quorum, is *oidcissuer.Issuer) *browser {
	b := q.browser()
	pem, err := os.ReadFile(is.CAFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	b.hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	b.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return b
}

// oidcLogin goes through the flow as a browser would: the console sends it
// to the issuer, the user fills in the login form, the issuer sends it back
// with a code (which tamper may change), and the console answers with where
// to land. On success the session's CSRF token is kept.
func (b *browser) oidcLogin(is *oidcissuer.Issuer, u oidcissuer.User, tamper func(*url.URL)) string {
	t := b.t
	t.Helper()
	r := b.get("/api/oidc/login")
	require.Equal(t, http.StatusFound, r.code, string(r.body))
	authURL, err := url.Parse(r.header.Get("Location"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(authURL.String(), is.URL+"/authorize?"), authURL.String())
	q := authURL.Query()
	assert.Equal(t, "S256", q.Get("code_challenge_method"))
	assert.NotEmpty(t, q.Get("nonce"))

	code, _ := b.fetch(authURL.String(), nil)
	require.Equal(t, http.StatusOK, code)
	form := url.Values{"username": {u.Name}, "password": {u.Password}}
	for k, v := range q {
		form[k] = v
	}
	code, header := b.fetch(is.URL+"/authorize", form)
	require.Equal(t, http.StatusFound, code)
	callback, err := url.Parse(header.Get("Location"))
	require.NoError(t, err)
	if tamper != nil {
		tamper(callback)
	}
	r = b.get(callback.RequestURI())
	require.Equal(t, http.StatusSeeOther, r.code, string(r.body))
	landing := r.header.Get("Location")
	if landing == "/" {
		var s struct {
			CSRF string `json:"csrfToken"`
		}
		b.get("/api/session").json(t, &s)
		b.csrf = s.CSRF
	}
	return landing
}

// fetch is a request to the issuer (not the console): a POST of form, or a GET.
func (b *browser) fetch(u string, form url.Values) (int, http.Header) {
	b.t.Helper()
	var resp *http.Response
	var err error
	if form != nil {
		resp, err = b.hc.PostForm(u, form)
	} else {
		resp, err = b.hc.Get(u)
	}
	require.NoError(b.t, err)
	require.NoError(b.t, resp.Body.Close())
	return resp.StatusCode, resp.Header
}
