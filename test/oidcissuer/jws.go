package oidcissuer

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
)

// keyID names the issuer's one signing key in the JWKS and in every token's
// header, so a verifier picks it by "kid" (RFC 7515 section 4.1.4).
const keyID = "test"

// b64 is base64url without padding, the encoding of every JWS part (RFC 7515
// section 2, "Base64url Encoding") and of a JWK's numbers (RFC 7518 section 2,
// "Base64urlUInt").
var b64 = base64.RawURLEncoding

// signRS256 returns claims as a JWT in the JWS Compact Serialization (RFC
// 7515 section 7.1): BASE64URL(header) "." BASE64URL(payload) "."
// BASE64URL(signature), the signature computed over the first two parts as
// RS256 defines it, RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 section 3.3).
func signRS256(key *rsa.PrivateKey, claims map[string]any) (string, error) {
	// "typ" JWT as RFC 7519 section 5.1 recommends.
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": keyID})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := b64.EncodeToString(header) + "." + b64.EncodeToString(payload)
	digest := sha256.Sum256([]byte(input))
	// PKCS #1 v1.5 signatures are deterministic: no randomness is needed.
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, digest[:])
	if err != nil {
		return "", err
	}
	return input + "." + b64.EncodeToString(sig), nil
}

// jwk is an RSA public key as a JSON Web Key (RFC 7517 section 4: kty, use,
// alg, kid; RFC 7518 section 6.3.1: n and e).
type jwk struct {
	Kty string `json:"kty"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	N   string `json:"n"`
	E   string `json:"e"`
}

// jwks is the issuer's JWK Set (RFC 7517 section 5): its one signing key.
func jwks(pub *rsa.PublicKey) map[string][]jwk {
	// n and e are Base64urlUInt: the unsigned big-endian octets of the value,
	// fewest that hold it (RFC 7518 sections 6.3.1.1 and 6.3.1.2), as
	// big.Int.Bytes returns them.
	e := big.NewInt(int64(pub.E)).Bytes()
	return map[string][]jwk{"keys": {{Kty: "RSA", Use: "sig", Alg: "RS256", Kid: keyID,
		N: b64.EncodeToString(pub.N.Bytes()), E: b64.EncodeToString(e)}}}
}
