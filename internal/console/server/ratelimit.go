package server

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// loginLimiter bounds login attempts per client address: a fixed window of
// Attempts per Window, so that tokens cannot be guessed through the console.
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

// allow counts one attempt from r's address and reports whether it may proceed.
func (l *loginLimiter) allow(r *http.Request) bool {
	addr := clientAddr(r)
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
	w, ok := l.seen[addr]
	if !ok || now.Sub(w.start) > l.window {
		w = &loginWindow{start: now}
		l.seen[addr] = w
	}
	w.n++
	return w.n <= l.attempts
}

// clientAddr is the connection's remote host. Forwarded headers are not
// trusted: a client could set them to escape the limit.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
