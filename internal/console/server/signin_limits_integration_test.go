package server_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/console/server"
)

// forged is token with its signature replaced: it claims the same subject,
// which the API server refuses, as an attacker guessing at that user would
// send.
func forged(token string, n int) string {
	parts := strings.Split(token, ".")
	return parts[0] + "." + parts[1] + "." + fmt.Sprintf("forged-signature-%d", n)
}

// TestSignInLimits floods bad sign-ins as an attacker would, against a real
// API server, and checks whom the limit locks out. Behind a trusted proxy
// (the test's connections come from 127.0.0.1, made the proxy) the client is
// the address the proxy appended; from any other peer the forwarded header is
// ignored, so an attacker cannot step around the limit by making one up.
func TestSignInLimits(t *testing.T) {
	proxy := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	q := startQuorum(t, server.Options{LoginAttempts: 3, LoginWindow: time.Hour, TrustedProxies: proxy})
	// from sends a sign-in as the proxy forwards it from addr, with the
	// X-Forwarded-For a client made up on the left of what the proxy added.
	from := func(addr, token string) reply {
		b := q.browser()
		return b.do(http.MethodPost, "/api/login", map[string]string{"token": token},
			map[string]string{"X-Forwarded-For": "10.9.9.9, " + addr})
	}
	const attacker, colleague, third = "203.0.113.7", "198.51.100.9", "192.0.2.44"

	t.Run("a flood at one user from one client behind the proxy", func(t *testing.T) {
		for i := range 3 {
			r := from(attacker, forged(q.tokens["viewer"], i))
			require.Equal(t, http.StatusUnauthorized, r.code, string(r.body))
		}
		r := from(attacker, forged(q.tokens["viewer"], 3))
		assert.Equal(t, http.StatusTooManyRequests, r.code, string(r.body))
		assert.Contains(t, string(r.body), "too many sign-in attempts")
		assert.Contains(t, q.log.String(), `"remote":"203.0.113.7"`, "the audit line names the client, not the proxy")

		r = from(colleague, q.tokens["operator"])
		assert.Equal(t, http.StatusOK, r.code, "another user at another address behind the same proxy signs in: %s", r.body)
		r = from(attacker, q.tokens["stranger"])
		assert.Equal(t, http.StatusTooManyRequests, r.code, "the attacker's address is held for every user")
		r = from(third, forged(q.tokens["viewer"], 4))
		assert.Equal(t, http.StatusTooManyRequests, r.code, "guessing at the flooded user from a new address is held too")
	})

	t.Run("a made-up X-Forwarded-For from an untrusted peer is ignored", func(t *testing.T) {
		direct := startQuorumBeside(t, q, server.Options{LoginAttempts: 3, LoginWindow: time.Hour})
		for i := range 4 {
			b := direct.browser()
			r := b.do(http.MethodPost, "/api/login", map[string]string{"token": fmt.Sprintf("guess-%d", i)},
				map[string]string{"X-Forwarded-For": fmt.Sprintf("198.18.0.%d", i+1), "Forwarded": fmt.Sprintf("for=198.19.0.%d", i+1)})
			want := http.StatusUnauthorized
			if i == 3 {
				want = http.StatusTooManyRequests
			}
			require.Equal(t, want, r.code, "attempt %d: %s", i+1, r.body)
		}
		assert.Contains(t, direct.log.String(), `"remote":"127.0.0.1"`)
		assert.NotContains(t, direct.log.String(), "198.18.0.")
	})
}
