package server

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/siterecovery/siterecovery/internal/console/session"
)

type loginBody struct {
	Token string `json:"token"`
}

type sessionInfo struct {
	User   string   `json:"user"`
	Groups []string `json:"groups,omitempty"`
	CSRF   string   `json:"csrfToken"`
}

// login checks a bearer token by asking the API server who it belongs to
// (a SelfSubjectReview made with that very token), and starts a session for
// that user. The token is kept in the server-side session only.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	// A JSON body cannot be sent cross-site without a CORS preflight, which
	// the console never grants: together with sameOrigin this stops login CSRF.
	if !sameOrigin(r) || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		writeJSON(w, http.StatusForbidden, apiError{Code: http.StatusForbidden, Message: "cross-site sign-in refused"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	var body loginBody
	if err := readJSON(r, &body); err != nil || strings.TrimSpace(body.Token) == "" {
		writeJSON(w, http.StatusBadRequest, apiError{Code: http.StatusBadRequest, Message: "send {\"token\": \"...\"}"})
		return
	}
	token := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(body.Token), "Bearer "))
	keys := []string{clientKey(s.clientAddr(r))}
	if u := userKey(token); u != "" {
		keys = append(keys, u)
	}
	if !s.limiter.allow(keys...) {
		s.audit.record(r, "", "login", "", "", http.StatusTooManyRequests, "rate limited")
		w.Header().Set("Retry-After", "60")
		writeJSON(w, http.StatusTooManyRequests, apiError{Code: http.StatusTooManyRequests, Message: "too many sign-in attempts from this address or for this user; wait a minute"})
		return
	}
	cl, err := s.clients.forToken(token)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, apiError{Code: http.StatusInternalServerError, Message: "internal error"})
		return
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := cl.Create(r.Context(), review); err != nil {
		e := toAPIError(err)
		if e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden {
			e = apiError{Code: http.StatusUnauthorized, Message: "the API server does not accept this token"}
		}
		s.audit.record(r, "", "login", "", "", e.Code, e.Message)
		writeJSON(w, e.Code, e)
		return
	}
	info := review.Status.UserInfo
	if info.Username == "" || info.Username == "system:anonymous" {
		s.audit.record(r, "", "login", "", "", http.StatusUnauthorized, "anonymous")
		writeJSON(w, http.StatusUnauthorized, apiError{Code: http.StatusUnauthorized, Message: "the API server does not accept this token"})
		return
	}
	sess, err := s.sessions.Create(info.Username, info.Groups, token)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, apiError{Code: http.StatusInternalServerError, Message: "internal error"})
		return
	}
	s.setSessionCookie(w, sess)
	s.audit.record(r, sess.User, "login", "", "", http.StatusOK, "signed in")
	writeJSON(w, http.StatusOK, sessionInfo{User: sess.User, Groups: sess.Groups, CSRF: sess.CSRF})
}

func (s *Server) logout(w http.ResponseWriter, r request) {
	s.sessions.Delete(r.session.ID)
	s.clearCookie(w)
	s.audit.record(r.Request, r.user(), "logout", "", "", http.StatusOK, "signed out")
	writeJSON(w, http.StatusOK, map[string]string{"status": "signed out"})
}

func (s *Server) whoami(w http.ResponseWriter, r request) {
	writeJSON(w, http.StatusOK, sessionInfo{User: r.session.User, Groups: r.session.Groups, CSRF: r.session.CSRF})
}

// cookieName carries the __Host- prefix over TLS: browsers then accept the
// cookie only from this host, over HTTPS, for the whole path.
func (s *Server) cookieName() string {
	if s.opts.TLS {
		return "__Host-siterecovery-console"
	}
	return "siterecovery-console"
}

func (s *Server) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.opts.TLS, SameSite: http.SameSiteStrictMode})
}

// setSessionCookie gives the browser the session's opaque id, and nothing else.
func (s *Server) setSessionCookie(w http.ResponseWriter, sess *session.Session) {
	http.SetCookie(w, &http.Cookie{
		Name: s.cookieName(), Value: sess.ID, Path: "/",
		HttpOnly: true, Secure: s.opts.TLS, SameSite: http.SameSiteStrictMode,
		MaxAge: int(s.opts.AbsoluteTimeout.Seconds()),
	})
}

// randomID is an unguessable identifier for a cookie.
func randomID() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
