package gather

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRedactReplacesKnownSecretsAndCredentialShapes(t *testing.T) {
	r := newRedactor()
	kubeconfig := "users:\n- name: admin\n  user:\n    token: abcdefghijklmnopqrstuvwxyz012345\n"
	r.add([]byte(kubeconfig))
	r.add([]byte("hunter2-password"))
	in := strings.Join([]string{
		"log: using token abcdefghijklmnopqrstuvwxyz012345",
		"annotation: " + base64.StdEncoding.EncodeToString([]byte("hunter2-password")),
		"header: Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.payload.sig",
		"yaml: client-key-data: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
		"kept: phase Completed, reason true",
	}, "\n")
	out := string(r.redact([]byte(in)))
	for _, secret := range []string{"abcdefghijklmnopqrstuvwxyz012345", "hunter2-password",
		base64.StdEncoding.EncodeToString([]byte("hunter2-password")), "eyJhbGciOiJSUzI1NiJ9", "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t", "MIIEow"} {
		assert.NotContains(t, out, secret)
	}
	assert.Contains(t, out, "kept: phase Completed, reason true")
	assert.Contains(t, out, "Bearer "+Redacted)
}
