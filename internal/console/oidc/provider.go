package oidc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Config describes the console's client at the issuer.
type Config struct {
	// IssuerURL is the issuer, exactly as its tokens name it (https).
	IssuerURL string
	// ClientID is the console's client id; ID tokens must be for it.
	ClientID string
	// ClientSecret is empty for a public client (PKCE alone).
	ClientSecret string
	// CAFile is the CA bundle of the issuer; empty trusts the system roots.
	CAFile string
	// Scopes asked for besides openid; offline_access or the issuer's own
	// scope for refresh tokens belongs here.
	Scopes []string
	// UsernameClaim is the claim the API server takes the user name from; a
	// token without it is refused before the API server is asked.
	UsernameClaim string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Provider runs sign-ins against one issuer. It discovers the issuer on
// first use and again after a failed discovery, so that a console started
// before its issuer recovers by itself.
type Provider struct {
	cfg Config
	hc  *http.Client

	mu       sync.Mutex
	endpoint oauth2.Endpoint
	verifier *gooidc.IDTokenVerifier
}

// New checks cfg and returns a provider; it makes no request yet.
func New(cfg Config) (*Provider, error) {
	if cfg.IssuerURL == "" || cfg.ClientID == "" {
		return nil, errors.New("OIDC needs an issuer URL and a client id")
	}
	if cfg.UsernameClaim == "" {
		cfg.UsernameClaim = "sub"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("OIDC CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OIDC CA %s: no certificate in it", cfg.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &Provider{cfg: cfg, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}, nil
}

func (p *Provider) ctx(ctx context.Context) context.Context {
	return gooidc.ClientContext(ctx, p.hc)
}

// discover returns the issuer's endpoints and an ID token verifier.
func (p *Provider) discover(ctx context.Context) (oauth2.Endpoint, *gooidc.IDTokenVerifier, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.verifier != nil {
		return p.endpoint, p.verifier, nil
	}
	op, err := gooidc.NewProvider(p.ctx(ctx), p.cfg.IssuerURL)
	if err != nil {
		return oauth2.Endpoint{}, nil, &Error{Reason: ReasonUnavailable, Message: "the identity provider could not be reached", cause: err}
	}
	p.endpoint = op.Endpoint()
	p.verifier = op.Verifier(&gooidc.Config{ClientID: p.cfg.ClientID, Now: p.cfg.Now})
	return p.endpoint, p.verifier, nil
}

func (p *Provider) oauth(endpoint oauth2.Endpoint, redirectURL string) *oauth2.Config {
	scopes := []string{gooidc.ScopeOpenID}
	for _, s := range p.cfg.Scopes {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	return &oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret,
		Endpoint: endpoint, RedirectURL: redirectURL, Scopes: scopes}
}
