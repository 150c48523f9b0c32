package oidc_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/console/oidc"
	"github.com/siterecovery/siterecovery/test/oidcissuer"
)

var alice = oidcissuer.User{Name: "alice", Password: "pw", Email: "alice@example.com"}

// signIn runs Begin, the user's login at the issuer, and Finish with the
// callback's state (tampered with when state is not empty).
func signIn(t *testing.T, is *oidcissuer.Issuer, p *oidc.Provider, state string) (oidc.Tokens, error) {
	t.Helper()
	ctx := context.Background()
	pd, authURL, err := p.Begin(ctx, "http://console.example/api/oidc/callback")
	require.NoError(t, err)
	u, err := url.Parse(authURL)
	require.NoError(t, err)
	require.Equal(t, "S256", u.Query().Get("code_challenge_method"))
	require.NotContains(t, authURL, pd.Verifier, "the PKCE verifier stays with the console")
	form := url.Values{"username": {alice.Name}, "password": {alice.Password}}
	for k, v := range u.Query() {
		form[k] = v
	}
	pem, err := os.ReadFile(is.CAFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.PostForm(is.URL+"/authorize", form)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusFound, resp.StatusCode)
	back, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	if state == "" {
		state = back.Query().Get("state")
	}
	return p.Finish(ctx, pd, state, back.Query().Get("code"))
}

func reason(t *testing.T, err error) oidc.Reason {
	t.Helper()
	var oe *oidc.Error
	require.True(t, errors.As(err, &oe), "%v", err)
	return oe.Reason
}

// TestFlow signs in against the test issuer without an API server: the
// verified ID token names the user, a refresh yields a new one, and a wrong
// state, nonce, audience or an expired token is refused with its reason.
func TestFlow(t *testing.T) {
	is := oidcissuer.Start(t, oidcissuer.Options{ClientID: "console", ClientSecret: "secret", Users: []oidcissuer.User{alice}})
	p, err := oidc.New(oidc.Config{IssuerURL: is.URL, ClientID: "console", ClientSecret: "secret", CAFile: is.CAFile,
		Scopes: []string{"email", "offline_access"}, UsernameClaim: "email"})
	require.NoError(t, err)

	tok, err := signIn(t, is, p, "")
	require.NoError(t, err)
	require.Equal(t, "alice@example.com", tok.Username)
	require.NotEmpty(t, tok.RefreshToken)
	require.WithinDuration(t, time.Now().Add(time.Hour), tok.Expiry, 5*time.Minute)

	again, err := p.Refresh(context.Background(), tok.RefreshToken)
	require.NoError(t, err)
	require.NotEqual(t, tok.IDToken, again.IDToken)
	_, err = p.Refresh(context.Background(), tok.RefreshToken)
	require.Equal(t, oidc.ReasonExpired, reason(t, err), "a rotated refresh token is spent")

	_, err = signIn(t, is, p, "forged")
	require.Equal(t, oidc.ReasonState, reason(t, err))

	is.SetNonce(new("replayed"))
	_, err = signIn(t, is, p, "")
	require.Equal(t, oidc.ReasonNonce, reason(t, err))
	is.SetNonce(nil)

	is.SetAudience("another-client")
	_, err = signIn(t, is, p, "")
	require.Equal(t, oidc.ReasonAudience, reason(t, err))
	is.SetAudience("")

	is.SetLifetime(-10 * time.Minute)
	_, err = signIn(t, is, p, "")
	require.Equal(t, oidc.ReasonExpired, reason(t, err))
}
