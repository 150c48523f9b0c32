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

// A kubeconfig Secret's structure lines stand in other objects too: only its
// credentials are replaced, so a zone in the bundle still parses and can be
// applied again.
func TestRedactKeepsTheStructureOfKubeconfigs(t *testing.T) {
	r := newRedactor()
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: primary-cluster
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: Q0EtREFUQS1OT1QtU0VDUkVU
contexts:
- name: primary-cluster
  context: {cluster: primary-cluster, user: quorum-manager}
current-context: primary-cluster
users:
- name: quorum-manager
  user:
    token: "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.c2ln"
`
	r.add([]byte(kubeconfig))
	zone := "apiVersion: siterecovery.trilio.io/v1alpha1\nkind: ProtectionZone\nspec:\n  clusters:\n  - name: primary-cluster\n    kubeconfigSecretRef: {name: primary-cluster-kubeconfig}\n"
	assert.Equal(t, zone, string(r.redact([]byte(zone))), "a zone names nothing secret")
	out := string(r.redact([]byte("connecting to https://10.0.0.1:6443 as quorum-manager with eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.c2ln")))
	assert.Equal(t, "connecting to https://10.0.0.1:6443 as quorum-manager with "+Redacted, out)
}
