package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/console/server"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// TestSecurity runs the console's security rules against a real API server:
// RBAC decides, sessions are opaque and expire, writes need the session's
// CSRF token, and no token leaves the server.
func TestSecurity(t *testing.T) {
	q := startQuorum(t, server.Options{LoginAttempts: 1000, IdleTimeout: 10 * time.Minute, AbsoluteTimeout: time.Hour})
	failover := map[string]any{"group": groupName, "targetCluster": "dr-cluster", "type": "planned"}
	path := "/api/namespaces/" + drNamespace + "/failoverrequests"
	var browsers []*browser

	t.Run("unauthenticated calls get 401", func(t *testing.T) {
		b := q.browser()
		browsers = append(browsers, b)
		for _, p := range []string{"/api/session", "/api/overview", "/api/operations", "/api/events",
			"/api/namespaces/" + drNamespace + "/groups/" + groupName} {
			assert.Equal(t, http.StatusUnauthorized, b.get(p).code, p)
		}
		assert.Equal(t, http.StatusUnauthorized, b.post(path, failover).code)
	})

	t.Run("a token the API server refuses does not sign in", func(t *testing.T) {
		b := q.browser()
		browsers = append(browsers, b)
		r := b.login("not-a-token")
		assert.Equal(t, http.StatusUnauthorized, r.code, string(r.body))
		assert.Empty(t, b.hc.Jar.Cookies(mustURL(t, q.srv.URL)))
	})

	t.Run("the viewer sees the group and may not fail it over", func(t *testing.T) {
		b := q.browser()
		browsers = append(browsers, b)
		r := b.login(q.tokens["viewer"])
		require.Equal(t, http.StatusOK, r.code, string(r.body))
		var ov struct {
			Summary struct{ Groups, ProtectedVMs int }
		}
		b.get("/api/overview").json(t, &ov)
		assert.Equal(t, 1, ov.Summary.Groups)
		assert.Equal(t, 2, ov.Summary.ProtectedVMs)

		r = b.post(path, failover)
		assert.Equal(t, http.StatusForbidden, r.code, string(r.body))
		assert.Contains(t, string(r.body), "cannot create resource")
		assert.Contains(t, q.log.String(), `"user":"system:serviceaccount:dr-production:viewer","action":"failover planned"`)
	})

	t.Run("a stranger signs in and sees no namespace", func(t *testing.T) {
		b := q.browser()
		browsers = append(browsers, b)
		require.Equal(t, http.StatusOK, b.login(q.tokens["stranger"]).code)
		var ov struct {
			Namespaces []any
		}
		b.get("/api/overview").json(t, &ov)
		assert.Empty(t, ov.Namespaces)
	})

	t.Run("writes need this session's CSRF token", func(t *testing.T) {
		other := q.browser()
		browsers = append(browsers, other)
		require.Equal(t, http.StatusOK, other.login(q.tokens["operator"]).code)
		b := q.browser()
		browsers = append(browsers, b)
		require.Equal(t, http.StatusOK, b.login(q.tokens["operator"]).code)
		require.NotEqual(t, other.csrf, b.csrf)

		r := b.do(http.MethodPost, path, failover, nil)
		assert.Equal(t, http.StatusForbidden, r.code, "missing CSRF token")
		r = b.do(http.MethodPost, path, failover, map[string]string{"X-CSRF-Token": other.csrf})
		assert.Equal(t, http.StatusForbidden, r.code, "another session's CSRF token")
		r = b.do(http.MethodPost, path, failover, map[string]string{"X-CSRF-Token": b.csrf, "Origin": "https://evil.example"})
		assert.Equal(t, http.StatusForbidden, r.code, "cross-origin write")
		var frs srv1alpha1.FailoverRequestList
		require.NoError(t, q.admin.List(context.Background(), &frs, client.InNamespace(drNamespace)))
		assert.Empty(t, frs.Items, "a refused write reached the API server")

		r = b.post(path, failover)
		require.Equal(t, http.StatusCreated, r.code, string(r.body))
		require.NoError(t, q.admin.List(context.Background(), &frs, client.InNamespace(drNamespace)))
		require.Len(t, frs.Items, 1)
		assert.Equal(t, "system:serviceaccount:dr-production:operator", frs.Items[0].Annotations["siterecovery.trilio.io/requested-by"])
	})

	t.Run("an unplanned failover needs the group's name", func(t *testing.T) {
		b := q.browser()
		browsers = append(browsers, b)
		require.Equal(t, http.StatusOK, b.login(q.tokens["operator"]).code)
		unplanned := map[string]any{"group": groupName, "targetCluster": "dr-cluster", "type": "unplanned", "confirm": "production"}
		assert.Equal(t, http.StatusBadRequest, b.post(path, unplanned).code)
		unplanned["confirm"] = groupName
		r := b.post(path, unplanned)
		require.Equal(t, http.StatusCreated, r.code, string(r.body))
		var created struct{ Name string }
		r.json(t, &created)
		fr := &srv1alpha1.FailoverRequest{}
		require.NoError(t, q.admin.Get(context.Background(), client.ObjectKey{Namespace: drNamespace, Name: created.Name}, fr))
		assert.Equal(t, groupName, fr.Annotations[srv1alpha1.ConfirmAnnotation])
	})

	t.Run("logout ends the session", func(t *testing.T) {
		b := q.browser()
		browsers = append(browsers, b)
		require.Equal(t, http.StatusOK, b.login(q.tokens["viewer"]).code)
		assert.Equal(t, http.StatusForbidden, b.do(http.MethodPost, "/api/logout", nil, nil).code, "logout without CSRF")
		assert.Equal(t, http.StatusOK, b.post("/api/logout", nil).code)
		assert.Equal(t, http.StatusUnauthorized, b.get("/api/overview").code)
	})

	t.Run("an expired session is refused", func(t *testing.T) {
		b := q.browser()
		browsers = append(browsers, b)
		require.Equal(t, http.StatusOK, b.login(q.tokens["viewer"]).code)
		require.Equal(t, http.StatusOK, b.get("/api/overview").code)
		q.clock.advance(11 * time.Minute)
		r := b.get("/api/overview")
		assert.Equal(t, http.StatusUnauthorized, r.code)
		assert.Contains(t, string(r.body), "session has ended")
	})

	t.Run("the cookie is opaque, HttpOnly and SameSite=Strict", func(t *testing.T) {
		b := q.browser()
		r := b.login(q.tokens["viewer"])
		browsers = append(browsers, b)
		cookies := r.header.Values("Set-Cookie")
		require.Len(t, cookies, 1)
		assert.Contains(t, cookies[0], "HttpOnly")
		assert.Contains(t, cookies[0], "SameSite=Strict")
		assert.NotContains(t, cookies[0], q.tokens["viewer"][:20])
	})

	t.Run("every response carries a strict CSP", func(t *testing.T) {
		b := q.browser()
		browsers = append(browsers, b)
		for _, p := range []string{"/", "/groups/x", "/api/overview"} {
			r := b.get(p)
			csp := r.header.Get("Content-Security-Policy")
			assert.Contains(t, csp, "script-src 'self'", p)
			assert.Contains(t, csp, "default-src 'none'", p)
			assert.NotContains(t, csp, "unsafe-inline", p)
			assert.NotContains(t, csp, "unsafe-eval", p)
			assert.Equal(t, "DENY", r.header.Get("X-Frame-Options"), p)
			assert.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"), p)
		}
	})

	t.Run("no token in any response, log or cookie", func(t *testing.T) {
		logs := q.log.String()
		for name, tok := range q.tokens {
			// A JWT's signature is its last part; its header is the same for
			// every token of an issuer, so look for the distinctive parts.
			parts := strings.Split(tok, ".")
			for _, p := range parts[1:] {
				assert.NotContains(t, logs, p, "%s's token in the log", name)
				for i, b := range browsers {
					assert.NotContains(t, b.seen.String(), p, "%s's token in a response to browser %d", name, i)
					for _, c := range b.hc.Jar.Cookies(mustURL(t, q.srv.URL)) {
						assert.NotContains(t, c.Value, p)
					}
				}
			}
		}
	})

	t.Run("login attempts are rate limited", func(t *testing.T) {
		limited := httptest.NewServer(server.New(server.Options{API: q.cluster.Config, Scheme: scheme.New(),
			LoginAttempts: 3, LoginWindow: time.Hour, Log: slog.New(slog.NewJSONHandler(q.log, nil))}))
		defer limited.Close()
		b := q.browser()
		b.base = limited.URL
		for range 3 {
			assert.Equal(t, http.StatusUnauthorized, b.login("guess").code)
		}
		assert.Equal(t, http.StatusTooManyRequests, b.login(q.tokens["viewer"]).code)
	})
}
