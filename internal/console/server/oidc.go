package server

import (
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/siterecovery/siterecovery/internal/console/oidc"
	"github.com/siterecovery/siterecovery/internal/console/session"
)

const (
	// pendingTTL bounds the time between the redirect to the issuer and the
	// callback; pendingMax the sign-ins under way at once.
	pendingTTL = 10 * time.Minute
	pendingMax = 10000
	// refreshMargin is how long before its expiry an ID token is refreshed.
	refreshMargin = time.Minute
)

// pendingLogins are the OIDC sign-ins under way, by the random id the
// starting browser holds in a cookie. The PKCE verifier and the nonce never
// reach the browser.
type pendingLogins struct {
	mu sync.Mutex
	m  map[string]oidc.Pending
}

func (p *pendingLogins) put(id string, pd oidc.Pending, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, v := range p.m {
		if now.Sub(v.Started) > pendingTTL {
			delete(p.m, k)
		}
	}
	if len(p.m) >= pendingMax {
		return false
	}
	p.m[id] = pd
	return true
}

// take returns and forgets a pending sign-in: each is used once.
func (p *pendingLogins) take(id string, now time.Time) (oidc.Pending, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pd, ok := p.m[id]
	delete(p.m, id)
	return pd, ok && now.Sub(pd.Started) <= pendingTTL
}

type loginOptions struct {
	OIDC bool `json:"oidc"`
}

func (s *Server) loginOptions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, loginOptions{OIDC: s.opts.OIDC != nil})
}

func (s *Server) pendingCookieName() string {
	if s.opts.TLS {
		return "__Host-siterecovery-console-oidc"
	}
	return "siterecovery-console-oidc"
}

// pendingCookie binds a sign-in to the browser that started it. It is Lax,
// not Strict: the issuer's redirect back is a cross-site navigation, on
// which a Strict cookie would not be sent.
func (s *Server) pendingCookie(w http.ResponseWriter, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: s.pendingCookieName(), Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: s.opts.TLS, SameSite: http.SameSiteLaxMode})
}

// redirectURL is where the issuer sends the browser back: the configured
// one, or this console's own callback as the browser reached it.
func (s *Server) redirectURL(r *http.Request) string {
	if s.opts.OIDCRedirectURL != "" {
		return s.opts.OIDCRedirectURL
	}
	scheme := "http"
	if s.opts.TLS {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/api/oidc/callback"
}

// oidcLogin sends the browser to the issuer.
func (s *Server) oidcLogin(w http.ResponseWriter, r *http.Request) {
	if !s.limiter.allow(clientKey(s.clientAddr(r))) {
		s.audit.record(r, "", "login oidc", "", "", http.StatusTooManyRequests, "rate limited")
		s.loginFailed(w, r, "too many sign-in attempts; wait a minute")
		return
	}
	pd, authURL, err := s.opts.OIDC.Begin(r.Context(), s.redirectURL(r))
	if err != nil {
		s.oidcFailed(w, r, err)
		return
	}
	id, err := randomID()
	if err != nil || !s.pending.put(id, pd, s.opts.Now()) {
		s.loginFailed(w, r, "the console cannot start a sign-in now; try again")
		return
	}
	s.pendingCookie(w, id, int(pendingTTL.Seconds()))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, authURL, http.StatusFound)
}

// oidcCallback completes a sign-in: the state, the code and the ID token are
// checked, the API server is asked who the token is, and a session holding
// the token server-side is started.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c, err := r.Cookie(s.pendingCookieName())
	s.pendingCookie(w, "", -1)
	if e := q.Get("error"); e != "" {
		s.oidcFailed(w, r, &oidc.Error{Reason: oidc.ReasonDenied, Message: "the identity provider refused the sign-in (" + e + ")"})
		return
	}
	if err != nil {
		s.oidcFailed(w, r, &oidc.Error{Reason: oidc.ReasonState, Message: "this sign-in was not started in this browser; start again"})
		return
	}
	pd, ok := s.pending.take(c.Value, s.opts.Now())
	if !ok {
		s.oidcFailed(w, r, &oidc.Error{Reason: oidc.ReasonState, Message: "this sign-in is unknown or took too long; start again"})
		return
	}
	tokens, err := s.opts.OIDC.Finish(r.Context(), pd, q.Get("state"), q.Get("code"))
	if err != nil {
		s.oidcFailed(w, r, err)
		return
	}
	cl, err := s.clients.forToken(tokens.IDToken)
	if err != nil {
		s.loginFailed(w, r, "internal error")
		return
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := cl.Create(r.Context(), review); err != nil || review.Status.UserInfo.Username == "" {
		msg := "the API server does not accept the ID token; it must trust this issuer and client id"
		if err != nil && toAPIError(err).Code != http.StatusUnauthorized && toAPIError(err).Code != http.StatusForbidden {
			msg = "the API server could not be asked who the ID token is"
		}
		s.audit.record(r, tokens.Username, "login oidc", "", "", http.StatusUnauthorized, msg)
		s.loginFailed(w, r, msg)
		return
	}
	info := review.Status.UserInfo
	sess, err := s.sessions.CreateWith(info.Username, info.Groups, session.Credentials{
		Token: tokens.IDToken, RefreshToken: tokens.RefreshToken, Expiry: tokens.Expiry})
	if err != nil {
		s.loginFailed(w, r, "internal error")
		return
	}
	s.setSessionCookie(w, sess)
	s.audit.record(r, sess.User, "login oidc", "", "", http.StatusOK, "signed in")
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// oidcFailed records a failed sign-in and shows the user why.
func (s *Server) oidcFailed(w http.ResponseWriter, r *http.Request, err error) {
	var oe *oidc.Error
	if !errors.As(err, &oe) {
		oe = &oidc.Error{Reason: oidc.ReasonInvalid, Message: "the sign-in failed"}
	}
	s.audit.record(r, "", "login oidc", "", "", http.StatusUnauthorized, string(oe.Reason)+": "+oe.Message)
	if cause := errors.Unwrap(oe); cause != nil {
		s.opts.Log.Info("OIDC sign-in failed", "reason", string(oe.Reason), "cause", safeCause(cause))
	}
	s.loginFailed(w, r, oe.Message)
}

// loginFailed sends the browser to the sign-in page, which shows message.
func (s *Server) loginFailed(w http.ResponseWriter, r *http.Request, message string) {
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/?login_error="+url.QueryEscape(message), http.StatusSeeOther)
}

// safeCause describes a library error for the log. A token endpoint's
// answer is reduced to its status and error code: its body is the issuer's
// to word, and the log takes no chances with it.
func safeCause(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		return "token endpoint: " + http.StatusText(status) + " " + re.ErrorCode
	}
	return err.Error()
}

// refreshDue is true when c expires within refreshMargin. A pasted token
// has no known expiry and is never due.
func (s *Server) refreshDue(c session.Credentials) bool {
	return !c.Expiry.IsZero() && !s.opts.Now().Add(refreshMargin).Before(c.Expiry)
}

// fresh refreshes the session's ID token when it is about to expire. It
// fails when the token expires and cannot be refreshed: the session is then
// over.
func (s *Server) fresh(r *http.Request, sess *session.Session) (session.Credentials, error) {
	if c := sess.Credentials(); !s.refreshDue(c) {
		return c, nil
	}
	return sess.Renew(func(c session.Credentials) (session.Credentials, error) {
		if !s.refreshDue(c) {
			return c, nil // a concurrent request refreshed it
		}
		if s.opts.OIDC == nil {
			return c, errors.New("the token has expired")
		}
		t, err := s.opts.OIDC.Refresh(r.Context(), c.RefreshToken)
		if err != nil {
			return c, err
		}
		s.audit.record(r, sess.User, "refresh oidc", "", "", http.StatusOK, "ID token refreshed")
		return session.Credentials{Token: t.IDToken, RefreshToken: t.RefreshToken, Expiry: t.Expiry}, nil
	})
}
