package drbd

import (
	"errors"
	"fmt"
	"regexp"
)

// PeerAuth is the net section's peer authentication: DRBD answers the
// peer's random challenge with an HMAC (cram-hmac-alg) keyed with
// shared-secret, and drops a connection whose peer answers wrongly (drbd
// kernel drbd_receiver.c, drbd_do_auth; DRBD 9 user guide, "net" options
// cram-hmac-alg and shared-secret). It authenticates the peer; the data
// still crosses the link unencrypted.
type PeerAuth struct {
	Alg    string // "sha256" or "sha512": the kernel's hmac(<alg>)
	Secret string
}

// maxSecretLen is DRBD's SHARED_SECRET_MAX (64) less its terminating NUL:
// the kernel cuts a longer secret, so both sides could differ unseen.
const maxSecretLen = 63

// secretChars are the characters a rendered secret may hold: enough for
// base64, and nothing drbdadm's tokenizer or a drbdsetup argument treats
// specially.
var secretChars = regexp.MustCompile(`^[A-Za-z0-9+/=_.-]+$`)

// String keeps the secret out of every %v and %s.
func (p PeerAuth) String() string { return fmt.Sprintf("PeerAuth{Alg:%s Secret:%s}", p.Alg, redacted) }

// GoString keeps the secret out of %#v.
func (p PeerAuth) GoString() string { return p.String() }

// validate checks p; its errors never quote the secret.
func (p *PeerAuth) validate() error {
	var errs []error
	if p.Alg != "sha256" && p.Alg != "sha512" {
		errs = append(errs, fmt.Errorf("cram-hmac-alg %q: must be sha256 or sha512", p.Alg))
	}
	if len(p.Secret) < 16 || len(p.Secret) > maxSecretLen || !secretChars.MatchString(p.Secret) {
		errs = append(errs, fmt.Errorf("shared-secret: must be 16 to %d characters of [A-Za-z0-9+/=_.-]", maxSecretLen))
	}
	return errors.Join(errs...)
}
