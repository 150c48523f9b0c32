package server

import (
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/console/oidc"
	"github.com/siterecovery/siterecovery/internal/console/session"
)

// Options configure a console server.
type Options struct {
	// API is the quorum API server: its address and the CA to trust. Any
	// credential it carries is dropped; the console acts only with users' tokens.
	API *rest.Config
	// Scheme knows the siterecovery kinds.
	Scheme *runtime.Scheme
	// Namespaces are the DR namespaces to look in when a user may not list
	// ProtectionZones cluster-wide; a user with cluster-wide rights sees every
	// DR namespace regardless.
	Namespaces []string
	// TLS is true when the console is served over HTTPS: the cookie is then
	// Secure and named with the __Host- prefix, and HSTS is sent.
	TLS bool
	// IdleTimeout and AbsoluteTimeout bound a session.
	IdleTimeout, AbsoluteTimeout time.Duration
	// LoginAttempts per LoginWindow are allowed from one client, and for one
	// user (the subject a token claims).
	LoginAttempts int
	LoginWindow   time.Duration
	// TrustedProxies are the proxies whose ClientAddressHeader names the
	// client; from any other peer the connection's address is the client.
	TrustedProxies []netip.Prefix
	// ClientAddressHeader is X-Forwarded-For (when empty) or Forwarded.
	ClientAddressHeader string
	// MaxStreamsPerSession bounds the live-update streams one session holds
	// open (default 4); each runs a watch per kind and DR namespace.
	MaxStreamsPerSession int
	// UI is the built front end (index.html at its root); nil serves a page
	// that says how to build it.
	UI fs.FS
	// Log receives the audit lines and errors.
	Log *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Prometheus, when set, serves each group's lag history; without it the
	// console shows the samples it took itself.
	Prometheus *PrometheusOptions
	// OIDC, when set, offers sign-in with the cluster's OIDC issuer; the ID
	// token it yields is the bearer token sent to the API server.
	OIDC *oidc.Provider
	// OIDCRedirectURL is the callback URL registered at the issuer; empty
	// derives it from the address the browser used.
	OIDCRedirectURL string
}

// Server is the console backend.
type Server struct {
	opts     Options
	sessions *session.Store
	clients  *clients
	limiter  *loginLimiter
	streams  *streamSlots
	audit    audit
	handler  http.Handler
	// lagSamples is the lag history the console has seen.
	lagSamples *lagSamples
	pending    *pendingLogins
}

// New builds a server.
func New(o Options) *Server {
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 30 * time.Minute
	}
	if o.AbsoluteTimeout == 0 {
		o.AbsoluteTimeout = 8 * time.Hour
	}
	if o.LoginAttempts == 0 {
		o.LoginAttempts = 10
	}
	if o.LoginWindow == 0 {
		o.LoginWindow = time.Minute
	}
	if o.ClientAddressHeader == "" {
		o.ClientAddressHeader = headerXForwardedFor
	}
	if o.MaxStreamsPerSession == 0 {
		o.MaxStreamsPerSession = 4
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{
		opts:     o,
		sessions: session.NewStore(o.IdleTimeout, o.AbsoluteTimeout),
		clients:  newClients(o.API, o.Scheme),
		limiter:  newLoginLimiter(o.LoginAttempts, o.LoginWindow, o.Now),
		streams:  &streamSlots{max: o.MaxStreamsPerSession, open: map[string]int{}},
		pending:  &pendingLogins{m: map[string]oidc.Pending{}},
	}
	s.audit = audit{log: o.Log, addr: s.clientAddr}
	s.lagSamples = newLagSamples(o.Now())
	s.sessions.Now = o.Now
	s.sessions.OnEnd(s.clients.forget)

	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/login", s.login)
	mux.HandleFunc("GET /api/login/options", s.loginOptions)
	if o.OIDC != nil {
		mux.HandleFunc("GET /api/oidc/login", s.oidcLogin)
		mux.HandleFunc("GET /api/oidc/callback", s.oidcCallback)
	}
	mux.HandleFunc("POST /api/logout", s.authed(s.logout))
	mux.HandleFunc("GET /api/session", s.authed(s.whoami))
	mux.HandleFunc("GET /api/overview", s.authed(s.overview))
	mux.HandleFunc("GET /api/operations", s.authed(s.operations))
	mux.HandleFunc("GET /api/namespaces/{ns}/groups/{name}", s.authed(s.group))
	mux.HandleFunc("GET /api/namespaces/{ns}/groups/{name}/preflight", s.authed(s.preflight))
	mux.HandleFunc("GET /api/namespaces/{ns}/groups/{name}/lag", s.authed(s.lag))
	mux.HandleFunc("GET /api/namespaces/{ns}/zones/{zone}/vms", s.authed(s.zoneVMs))
	mux.HandleFunc("GET /api/namespaces/{ns}/report", s.authed(s.report))
	mux.HandleFunc("POST /api/namespaces/{ns}/failoverrequests", s.authed(s.createFailover))
	mux.HandleFunc("POST /api/namespaces/{ns}/testfailovers", s.authed(s.createTestFailover))
	mux.HandleFunc("POST /api/namespaces/{ns}/protectionrequests", s.authed(s.createProtection))
	mux.HandleFunc("GET /api/events", s.authed(s.events))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/api/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, apiError{Code: http.StatusNotFound, Message: "no such API"})
	})
	mux.Handle("/", s.static())
	s.handler = securityHeaders(o.TLS, mux)
	return s
}

// ServeHTTP serves the console.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Run sweeps expired sessions until ctx ends.
func (s *Server) Run(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sessions.Sweep()
		}
	}
}

// request is what an authenticated handler gets.
type request struct {
	*http.Request
	session *session.Session
	client  client.WithWatch
	// creds are what client acts with: an event stream compares them with
	// the session's to notice a refresh.
	creds session.Credentials
}

func (r request) user() string { return r.session.User }

type authedHandler func(http.ResponseWriter, request)

// authed requires a live session, and for writes the session's CSRF token in
// the X-CSRF-Token header and a same-origin request.
func (s *Server) authed(h authedHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(s.cookieName())
		if err != nil {
			writeJSON(w, http.StatusUnauthorized, apiError{Code: http.StatusUnauthorized, Message: "sign in first"})
			return
		}
		sess, ok := s.sessions.Get(c.Value)
		if !ok {
			s.clearCookie(w)
			writeJSON(w, http.StatusUnauthorized, apiError{Code: http.StatusUnauthorized, Message: "your session has ended; sign in again"})
			return
		}
		if mutating(r.Method) {
			if !sameOrigin(r) || !sess.CSRFMatches(r.Header.Get(csrfHeader)) {
				s.audit.record(r, sess.User, r.Method+" "+r.URL.Path, "", "", http.StatusForbidden, "CSRF token missing or wrong")
				writeJSON(w, http.StatusForbidden, apiError{Code: http.StatusForbidden, Reason: "CSRF", Message: "the request lacks this session's CSRF token"})
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		}
		creds, err := s.fresh(r, sess)
		if err != nil {
			s.sessions.Delete(sess.ID)
			s.clearCookie(w)
			s.audit.record(r, sess.User, "refresh oidc", "", "", http.StatusUnauthorized, "session ended: "+err.Error())
			writeJSON(w, http.StatusUnauthorized, apiError{Code: http.StatusUnauthorized, Message: "your sign-in has expired; sign in again"})
			return
		}
		cl, err := s.clients.forSession(sess.ID, creds.Token)
		if err != nil {
			s.opts.Log.Error("building the user API client", "error", err)
			writeJSON(w, http.StatusInternalServerError, apiError{Code: http.StatusInternalServerError, Message: "internal error"})
			return
		}
		h(w, request{Request: r, session: sess, client: cl, creds: creds})
	}
}

const csrfHeader = "X-CSRF-Token"

func mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// sameOrigin refuses requests a browser marks as coming from another site;
// the CSRF token is the main defence, this is the second.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		return o == "http://"+r.Host || o == "https://"+r.Host
	}
	return true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func readJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
