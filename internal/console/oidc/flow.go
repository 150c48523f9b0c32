package oidc

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Pending is a sign-in between the redirect to the issuer and the callback.
// The console keeps it server-side, found through a short-lived cookie of
// the browser that started it.
type Pending struct {
	State, Nonce, Verifier, RedirectURL string
	Started                             time.Time
}

// Tokens are the outcome of a sign-in or a refresh.
type Tokens struct {
	// IDToken is the verified ID token: the bearer token for the API server.
	IDToken string
	// RefreshToken is empty when the issuer gave none.
	RefreshToken string
	// Expiry is the ID token's expiry.
	Expiry time.Time
	// Username is the value of the configured username claim.
	Username string
}

// Begin starts a sign-in: the pending state to keep and the issuer's
// authorization URL to send the browser to.
func (p *Provider) Begin(ctx context.Context, redirectURL string) (Pending, string, error) {
	endpoint, _, err := p.discover(ctx)
	if err != nil {
		return Pending{}, "", err
	}
	pd := Pending{Verifier: oauth2.GenerateVerifier(), RedirectURL: redirectURL, Started: p.cfg.Now()}
	if pd.State, err = random(); err != nil {
		return Pending{}, "", err
	}
	if pd.Nonce, err = random(); err != nil {
		return Pending{}, "", err
	}
	u := p.oauth(endpoint, redirectURL).AuthCodeURL(pd.State, oauth2.S256ChallengeOption(pd.Verifier), gooidc.Nonce(pd.Nonce))
	return pd, u, nil
}

// Finish completes a sign-in from the callback's state and code: it checks
// the state, redeems the code with the PKCE verifier and verifies the ID
// token, its nonce included.
func (p *Provider) Finish(ctx context.Context, pd Pending, state, code string) (Tokens, error) {
	if state == "" || subtle.ConstantTimeCompare([]byte(state), []byte(pd.State)) != 1 {
		return Tokens{}, &Error{Reason: ReasonState, Message: "the sign-in's state does not match the one this browser started; start again"}
	}
	if code == "" {
		return Tokens{}, &Error{Reason: ReasonDenied, Message: "the identity provider returned no authorization code"}
	}
	endpoint, verifier, err := p.discover(ctx)
	if err != nil {
		return Tokens{}, err
	}
	tok, err := p.oauth(endpoint, pd.RedirectURL).Exchange(p.ctx(ctx), code, oauth2.VerifierOption(pd.Verifier))
	if err != nil {
		return Tokens{}, &Error{Reason: ReasonDenied, Message: "the identity provider refused to redeem the authorization code", cause: err}
	}
	out, idt, err := p.verify(ctx, verifier, tok)
	if err != nil {
		return Tokens{}, err
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(pd.Nonce)) != 1 {
		return Tokens{}, &Error{Reason: ReasonNonce, Message: "the ID token's nonce does not match this sign-in"}
	}
	return out, nil
}

// Refresh obtains a new ID token with a refresh token.
func (p *Provider) Refresh(ctx context.Context, refreshToken string) (Tokens, error) {
	if refreshToken == "" {
		return Tokens{}, &Error{Reason: ReasonExpired, Message: "the ID token expires and the identity provider gave no refresh token"}
	}
	endpoint, verifier, err := p.discover(ctx)
	if err != nil {
		return Tokens{}, err
	}
	// An expired oauth2 token makes the source refresh at once.
	src := p.oauth(endpoint, "").TokenSource(p.ctx(ctx), &oauth2.Token{RefreshToken: refreshToken, Expiry: time.Unix(1, 0)})
	tok, err := src.Token()
	if err != nil {
		return Tokens{}, &Error{Reason: ReasonExpired, Message: "the identity provider refused to refresh the sign-in", cause: err}
	}
	out, _, err := p.verify(ctx, verifier, tok)
	if err != nil {
		return Tokens{}, err
	}
	if out.RefreshToken == "" {
		out.RefreshToken = refreshToken // the issuer does not rotate it
	}
	return out, nil
}

func (p *Provider) verify(ctx context.Context, verifier *gooidc.IDTokenVerifier, tok *oauth2.Token) (Tokens, *gooidc.IDToken, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Tokens{}, nil, &Error{Reason: ReasonInvalid, Message: "the identity provider returned no ID token"}
	}
	idt, err := verifier.Verify(p.ctx(ctx), raw)
	if err != nil {
		return Tokens{}, nil, classify(err)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Tokens{}, nil, &Error{Reason: ReasonInvalid, Message: "the ID token's claims do not decode", cause: err}
	}
	name, _ := claims[p.cfg.UsernameClaim].(string)
	if name == "" {
		return Tokens{}, nil, &Error{Reason: ReasonInvalid, Message: fmt.Sprintf("the ID token has no %q claim, which names the user", p.cfg.UsernameClaim)}
	}
	return Tokens{IDToken: raw, RefreshToken: tok.RefreshToken, Expiry: idt.Expiry, Username: name}, idt, nil
}

// classify turns a verification failure into a reason a user can act on.
func classify(err error) *Error {
	var expired *gooidc.TokenExpiredError
	msg := err.Error()
	switch {
	case errors.As(err, &expired):
		return &Error{Reason: ReasonExpired, Message: "the ID token has expired", cause: err}
	case strings.Contains(msg, "expected audience"):
		return &Error{Reason: ReasonAudience, Message: "the ID token is for another client (its audience is not this console's client id)", cause: err}
	case strings.Contains(msg, "issued by a different provider"):
		return &Error{Reason: ReasonInvalid, Message: "the ID token was issued by another issuer", cause: err}
	case strings.Contains(msg, "signature"):
		return &Error{Reason: ReasonInvalid, Message: "the ID token's signature does not verify with the issuer's keys", cause: err}
	}
	return &Error{Reason: ReasonInvalid, Message: "the ID token does not verify", cause: err}
}

func random() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
