package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/oidcissuer"
)

// With -oidc the sandbox runs the test OpenID Connect issuer, makes the API
// servers trust it, and offers sign-in with it in the console: alice signs
// in there and acts as the console operator, through RBAC bound to her OIDC
// user name.
const oidcClientID = "siterecovery-console"

var oidcAlice = oidcissuer.User{Name: "alice", Password: "alice-password", Email: "alice@example.com"}

// startIssuer starts the issuer before the API servers, and adds to ho the
// flags that make them trust it. Without -oidc it does nothing.
func (sb *sandbox) startIssuer(ho *harness.Options) error {
	if !sb.o.oidc {
		return nil
	}
	secret, err := randomSecret()
	if err != nil {
		return err
	}
	is, err := oidcissuer.Serve(oidcissuer.Options{ClientID: oidcClientID, ClientSecret: secret,
		Users: []oidcissuer.User{oidcAlice}}, sb.o.workDir)
	if err != nil {
		return fmt.Errorf("starting the OIDC issuer: %w", err)
	}
	sb.issuer, sb.oidcSecret = is, secret
	ho.APIServerFlags = is.APIServerFlags(oidcClientID)
	say("OIDC issuer at %s; the API servers trust it", is.URL)
	return nil
}

// consoleOIDC binds alice's OIDC user to the console operator's role and
// returns the console's OIDC flags. The client secret goes in a file, never
// on a command line, where any local user could read it.
func (sb *sandbox) consoleOIDC(ctx context.Context, operatorRole string) ([]string, error) {
	if sb.issuer == nil {
		return nil, nil
	}
	c := sb.zone.Clusters["quorum"].Client
	if err := c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: operatorRole + "-oidc"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: operatorRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "oidc:" + oidcAlice.Email}}}); err != nil {
		return nil, err
	}
	secretFile := filepath.Join(sb.o.workDir, "oidc-client-secret")
	if err := os.WriteFile(secretFile, []byte(sb.oidcSecret), 0o600); err != nil {
		return nil, err
	}
	return []string{
		"--oidc-issuer-url=" + sb.issuer.URL, "--oidc-client-id=" + oidcClientID,
		"--oidc-client-secret-file=" + secretFile, "--oidc-ca-file=" + sb.issuer.CAFile,
		"--oidc-redirect-url=https://" + sb.o.consoleAddr + "/api/oidc/callback",
	}, nil
}

func (sb *sandbox) printOIDC() {
	if sb.issuer == nil {
		return
	}
	fmt.Printf(`  or choose "Log in with OIDC" and sign in as %s / %s (RBAC user oidc:%s, the operator's role).
  The issuer %s serves a certificate of its own (%s): the browser asks once
  to accept it.
`, oidcAlice.Name, oidcAlice.Password, oidcAlice.Email, sb.issuer.URL, sb.issuer.CAFile)
}

func (sb *sandbox) stopIssuer() {
	if sb.issuer != nil {
		sb.issuer.Close()
	}
}

func randomSecret() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
