// Package oidc signs console users in with the cluster's OpenID Connect
// issuer: the authorization code flow with PKCE (S256), a state bound to the
// browser and a nonce bound to the ID token. The ID token it obtains is
// verified (issuer, audience, signature by the issuer's keys, expiry, nonce)
// and is then the bearer token the console sends to the quorum API server,
// which must trust the same issuer. Tokens stay in the console process; the
// errors of this package never carry one.
package oidc
