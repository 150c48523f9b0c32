package server

import (
	"log/slog"
	"net/http"
)

// audit writes one line per security-relevant act: who (the user the API
// server authenticated), what, on which object, and the outcome. It never
// receives a token or a cookie.
type audit struct {
	log *slog.Logger
	// addr names the client: the connection's peer, or the address a
	// trusted proxy forwarded.
	addr func(*http.Request) string
}

func (a audit) record(r *http.Request, user, action, namespace, name string, code int, msg string) {
	a.log.Info("audit",
		"user", user, "action", action, "namespace", namespace, "name", name,
		"code", code, "result", msg, "remote", a.addr(r))
}
