package gather

import (
	"encoding/base64"
	"regexp"
	"sort"
	"strings"
)

// Redacted replaces every credential in a bundle.
const Redacted = "[REDACTED]"

// redactor replaces known secret values and credential-shaped text.
type redactor struct {
	secrets map[string]bool
}

func newRedactor() *redactor { return &redactor{secrets: map[string]bool{}} }

// minSecretLen skips values too short to be credentials ("true", "1"), which
// replaced everywhere would make the bundle unreadable.
const minSecretLen = 6

// add records a secret value, its base64 form, and each line of a multi-line
// value (a kubeconfig's embedded token, certificate or key).
func (r *redactor) add(value []byte) {
	v := string(value)
	for _, s := range append([]string{v, base64.StdEncoding.EncodeToString(value)}, strings.Split(v, "\n")...) {
		s = strings.TrimSpace(s)
		if len(s) >= minSecretLen {
			r.secrets[s] = true
		}
		// A kubeconfig line "token: abc" or "client-key-data: abc": its value.
		if _, val, ok := strings.Cut(s, ": "); ok && len(strings.TrimSpace(val)) >= minSecretLen*2 {
			r.secrets[strings.TrimSpace(val)] = true
		}
	}
}

var patterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}`),
	regexp.MustCompile(`(?i)((?:token|password|client-key-data|client-certificate-data|certificate-authority-data)["']?\s*[:=]\s*["']?)[^\s"',}]{8,}`),
	regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`),
}

// redact returns b with every known secret and credential-shaped text replaced.
func (r *redactor) redact(b []byte) []byte {
	s := string(b)
	// Longest first, so that a value is not half-replaced by one it contains.
	keys := make([]string, 0, len(r.secrets))
	for k := range r.secrets {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		s = strings.ReplaceAll(s, k, Redacted)
	}
	for i, p := range patterns {
		if i == 2 {
			s = p.ReplaceAllString(s, Redacted)
			continue
		}
		s = p.ReplaceAllString(s, "${1}"+Redacted)
	}
	return []byte(s)
}
