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

// add records a secret value and its base64 form, and from a multi-line
// value (a kubeconfig) the credentials inside it: the value of each credential
// field, and bare token or key lines. Its other lines ("apiVersion: v1",
// "name: primary-cluster", the server address) stand in every object of the
// bundle too; replacing them everywhere would leave the bundle unreadable, and
// a zone rebuilt from it, as the quorum-cluster-lost procedure does, unusable.
func (r *redactor) add(value []byte) {
	r.record(string(value))
	r.record(base64.StdEncoding.EncodeToString(value))
	if !strings.Contains(string(value), "\n") {
		return
	}
	for _, line := range strings.Split(string(value), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
		key, val, isField := strings.Cut(line, ":")
		switch {
		case isField && credentialField[strings.Trim(strings.TrimSpace(key), `"'`)]:
			r.record(strings.Trim(strings.TrimSpace(val), `"'`))
		case !isField && !strings.ContainsAny(line, " \t") && len(line) >= 2*minSecretLen:
			r.record(line) // a raw token, or a line of a PEM block
		}
	}
}

// credentialField names the fields of a kubeconfig (or any YAML secret) whose
// values are credentials.
var credentialField = map[string]bool{
	"token": true, "password": true, "client-key-data": true, "client-certificate-data": true,
	"id-token": true, "refresh-token": true, "access-token": true, "client-secret": true,
}

func (r *redactor) record(s string) {
	if s = strings.TrimSpace(s); len(s) >= minSecretLen {
		r.secrets[s] = true
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
