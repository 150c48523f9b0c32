// Package oidcissuer is a small OpenID Connect provider for tests: discovery,
// JWKS, an authorization endpoint with a login form, and a token endpoint
// (authorization code with PKCE S256, refresh tokens), served over TLS with
// a certificate of its own, and a few knobs that make it misbehave so that
// tests can see the console refuse its tokens. It is a test fixture, never a
// product code path.
package oidcissuer
