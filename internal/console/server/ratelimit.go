package server

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// loginLimiter bounds sign-in attempts per key, a fixed window of attempts
// per window each. Every attempt counts against its client and, when the
// token names one, its user: guessing from one client, or at one user from
// many, is bounded, and a flood from one client at one user leaves every
// other user at every other client free to sign in.
type loginLimiter struct {
	attempts int
	window   time.Duration
	now      func() time.Time

	mu   sync.Mutex
	seen map[string]*loginWindow
}

type loginWindow struct {
	start time.Time
	n     int
}

func newLoginLimiter(attempts int, window time.Duration, now func() time.Time) *loginLimiter {
	return &loginLimiter{attempts: attempts, window: window, now: now, seen: map[string]*loginWindow{}}
}

// allow counts one attempt against every key and reports whether it may
// proceed. A refused attempt counts against none of them, so that a client
// already refused does not keep a user's window full.
func (l *loginLimiter) allow(keys ...string) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seen) > 10000 { // forget old windows rather than grow without bound
		for k, w := range l.seen {
			if now.Sub(w.start) > l.window {
				delete(l.seen, k)
			}
		}
	}
	windows := make([]*loginWindow, 0, len(keys))
	for _, k := range keys {
		w, ok := l.seen[k]
		if !ok || now.Sub(w.start) > l.window {
			w = &loginWindow{start: now}
			l.seen[k] = w
		}
		if w.n >= l.attempts {
			return false
		}
		windows = append(windows, w)
	}
	for _, w := range windows {
		w.n++
	}
	return true
}

// clientKey and userKey name the limiter's windows.
func clientKey(addr string) string { return "client:" + addr }

// userKey is the window of the user a token claims to be: the "sub" of a
// JWT (a ServiceAccount token's system:serviceaccount:<ns>:<name>, an OIDC
// ID token's subject), read without checking the signature since the API
// server checks the token right after. Empty for an opaque token, which
// names no user the console can see. The subject is hashed so that a long
// made-up one costs the limiter no more than a short one.
func userKey(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Sub == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(claims.Sub))
	return "user:" + hex.EncodeToString(sum[:16])
}
