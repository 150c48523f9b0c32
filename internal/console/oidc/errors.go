package oidc

// Reason says why a sign-in failed, for the page and the audit line.
type Reason string

const (
	// ReasonState means the callback's state is not the one this browser started.
	ReasonState Reason = "state"
	// ReasonNonce means the ID token was not minted for this sign-in.
	ReasonNonce Reason = "nonce"
	// ReasonAudience means the ID token is for another client.
	ReasonAudience Reason = "audience"
	// ReasonExpired means the ID token has expired and cannot be refreshed.
	ReasonExpired Reason = "expired"
	// ReasonInvalid means the ID token does not verify otherwise.
	ReasonInvalid Reason = "invalid"
	// ReasonDenied means the issuer refused (the user, or the code exchange).
	ReasonDenied Reason = "denied"
	// ReasonUnavailable means the issuer could not be reached.
	ReasonUnavailable Reason = "unavailable"
)

// Error is a failed sign-in or refresh. Its message is fit for the user; the
// cause (for the operator's log) is the library's error, which names claims
// and endpoints but never carries a token.
type Error struct {
	Reason  Reason
	Message string
	cause   error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.cause }
