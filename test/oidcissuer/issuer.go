package oidcissuer

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// User is someone who can sign in at the issuer.
type User struct {
	// Name is the login name and the preferred_username claim; Password the
	// login form's password.
	Name, Password string
	// Email is the email claim (email_verified is true).
	Email string
	// Groups is the groups claim.
	Groups []string
}

// Options configure an issuer.
type Options struct {
	// ClientID and ClientSecret identify the one client the issuer knows.
	ClientID, ClientSecret string
	// Users may sign in.
	Users []User
	// Lifetime of the ID tokens; an hour when zero.
	Lifetime time.Duration
}

// Issuer is a running provider.
type Issuer struct {
	// URL is the issuer URL (https://127.0.0.1:port).
	URL string
	// CAFile holds the PEM certificate that signs the issuer's serving
	// certificate, for the API server's --oidc-ca-file and the console.
	CAFile string

	opts Options
	key  *rsa.PrivateKey
	srv  *httptest.Server

	mu       sync.Mutex
	codes    map[string]grant
	refresh  map[string]grant
	lifetime time.Duration
	audience string
	nonce    *string
	refreshN int
	issued   []string
}

// grant is what a code or refresh token stands for.
type grant struct {
	user                          User
	nonce, challenge, redirectURI string
}

// Start serves an issuer until the test ends.
func Start(t testing.TB, o Options) *Issuer {
	t.Helper()
	is, err := Serve(o, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(is.Close)
	return is
}

// Serve starts an issuer outside a test (the sandbox runs one), writing its
// CA certificate into dir. Close stops it.
func Serve(o Options, dir string) (*Issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if o.Lifetime == 0 {
		o.Lifetime = time.Hour
	}
	is := &Issuer{opts: o, key: key, codes: map[string]grant{}, refresh: map[string]grant{}, lifetime: o.Lifetime}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", is.discovery)
	mux.HandleFunc("GET /keys", is.keys)
	mux.HandleFunc("GET /authorize", is.authorizeForm)
	mux.HandleFunc("POST /authorize", is.authorize)
	mux.HandleFunc("POST /token", is.token)
	is.srv = httptest.NewTLSServer(mux)
	is.URL = is.srv.URL
	is.CAFile = filepath.Join(dir, "oidc-ca.crt")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: is.srv.Certificate().Raw})
	if err := os.WriteFile(is.CAFile, ca, 0o600); err != nil {
		is.srv.Close()
		return nil, err
	}
	return is, nil
}

// Close stops the issuer.
func (is *Issuer) Close() { is.srv.Close() }

// SetLifetime sets the lifetime of the ID tokens issued from now on; a
// negative one issues tokens that have already expired.
func (is *Issuer) SetLifetime(d time.Duration) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.lifetime = d
}

// SetAudience makes the ID tokens name another audience ("" restores the
// client id).
func (is *Issuer) SetAudience(aud string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.audience = aud
}

// SetNonce makes the ID tokens of code grants carry nonce instead of the one
// the client asked for; nil restores the client's.
func (is *Issuer) SetNonce(nonce *string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.nonce = nonce
}

// RevokeRefreshTokens forgets every refresh token issued so far.
func (is *Issuer) RevokeRefreshTokens() {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.refresh = map[string]grant{}
}

// Refreshes is how many refresh grants the issuer has answered.
func (is *Issuer) Refreshes() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.refreshN
}

// Issued is every token (ID, access, refresh) the token endpoint handed out,
// for tests that look for a leak.
func (is *Issuer) Issued() []string {
	is.mu.Lock()
	defer is.mu.Unlock()
	return append([]string(nil), is.issued...)
}

// APIServerFlags make a kube-apiserver trust this issuer for clientID: the
// email claim is the user name and the groups claim the groups, both
// prefixed with "oidc:".
func (is *Issuer) APIServerFlags(clientID string) map[string]string {
	return map[string]string{
		"oidc-issuer-url": is.URL, "oidc-client-id": clientID, "oidc-ca-file": is.CAFile,
		"oidc-username-claim": "email", "oidc-username-prefix": "oidc:",
		"oidc-groups-claim": "groups", "oidc-groups-prefix": "oidc:",
	}
}

// IDToken mints an ID token of user directly, for tests that only need the
// API server to accept one.
func (is *Issuer) IDToken(t testing.TB, user User) string {
	t.Helper()
	tok, err := is.sign(grant{user: user})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (is *Issuer) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                is.URL,
		"authorization_endpoint":                is.URL + "/authorize",
		"token_endpoint":                        is.URL + "/token",
		"jwks_uri":                              is.URL + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"scopes_supported":                      []string{"openid", "email", "groups", "offline_access"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	})
}

func (is *Issuer) keys(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, jwks(&is.key.PublicKey))
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Test issuer: sign in</title></head>
<body><main><h1>Test issuer</h1>
{{if .Error}}<p role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/authorize">
{{range $k, $v := .Params}}<input type="hidden" name="{{$k}}" value="{{$v}}">{{end}}
<label for="username">Username</label> <input id="username" name="username" autocomplete="username">
<label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password">
<button type="submit">Sign in</button>
</form></main></body></html>`))

// authorizeForm checks the client's request and shows the login form,
// which carries the request's parameters on.
func (is *Issuer) authorizeForm(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if msg := is.checkAuthorize(q); msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	is.renderLogin(w, q, "")
}

func (is *Issuer) renderLogin(w http.ResponseWriter, q url.Values, msg string) {
	params := map[string]string{}
	for _, k := range []string{"client_id", "redirect_uri", "state", "nonce", "code_challenge", "code_challenge_method", "scope", "response_type"} {
		params[k] = q.Get(k)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = loginPage.Execute(w, map[string]any{"Params": params, "Error": msg})
}

func (is *Issuer) checkAuthorize(q url.Values) string {
	switch {
	case q.Get("client_id") != is.opts.ClientID:
		return "unknown client"
	case q.Get("response_type") != "code":
		return "only the code flow is supported"
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		return "PKCE with S256 is required"
	case q.Get("redirect_uri") == "" || q.Get("state") == "" || q.Get("nonce") == "":
		return "redirect_uri, state and nonce are required"
	}
	return ""
}

// authorize checks the user's password and sends the browser back with a code.
func (is *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	f := r.PostForm
	if msg := is.checkAuthorize(f); msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	var user *User
	for i := range is.opts.Users {
		if u := &is.opts.Users[i]; u.Name == f.Get("username") && u.Password == f.Get("password") {
			user = u
		}
	}
	if user == nil {
		is.renderLogin(w, f, "Wrong username or password.")
		return
	}
	code := random()
	is.mu.Lock()
	is.codes[code] = grant{user: *user, nonce: f.Get("nonce"), challenge: f.Get("code_challenge"), redirectURI: f.Get("redirect_uri")}
	is.mu.Unlock()
	back, err := url.Parse(f.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	bq := back.Query()
	bq.Set("code", code)
	bq.Set("state", f.Get("state"))
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token redeems a code (checking the PKCE verifier) or a refresh token.
func (is *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, "invalid_request")
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != is.opts.ClientID || secret != is.opts.ClientSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	is.mu.Lock()
	var g grant
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code := r.PostForm.Get("code")
		g, ok = is.codes[code]
		delete(is.codes, code)
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || g.redirectURI != r.PostForm.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			ok = false
		}
		if is.nonce != nil {
			g.nonce = *is.nonce
		}
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		g, ok = is.refresh[rt]
		delete(is.refresh, rt) // rotated
		g.nonce = ""
		is.refreshN++
	}
	is.mu.Unlock()
	if !ok {
		tokenError(w, "invalid_grant")
		return
	}
	idToken, err := is.sign(g)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	rt, at := random(), random()
	is.mu.Lock()
	is.refresh[rt] = grant{user: g.user}
	is.issued = append(is.issued, idToken, rt, at)
	lifetime := is.lifetime
	is.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": at, "token_type": "Bearer", "expires_in": int(lifetime.Seconds()),
		"id_token": idToken, "refresh_token": rt,
	})
}

func (is *Issuer) sign(g grant) (string, error) {
	is.mu.Lock()
	aud, lifetime := is.audience, is.lifetime
	is.mu.Unlock()
	if aud == "" {
		aud = is.opts.ClientID
	}
	now := time.Now()
	claims := map[string]any{
		"iss": is.URL, "sub": "user-" + g.user.Name, "aud": aud,
		// NumericDate: seconds since the epoch (RFC 7519 section 2).
		"iat": now.Unix(), "exp": now.Add(lifetime).Unix(),
		"email": g.user.Email, "email_verified": true,
		"preferred_username": g.user.Name, "groups": g.user.Groups,
	}
	if g.nonce != "" {
		claims["nonce"] = g.nonce
	}
	return signRS256(is.key, claims)
}

func tokenError(w http.ResponseWriter, code string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func random() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
