package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/process"
)

// startConsole runs the web console against the quorum cluster and returns a
// token of an operator service account to sign in with. The console itself
// gets no credential: only the API server's address and CA.
func (sb *sandbox) startConsole(ctx context.Context) (string, error) {
	q := sb.zone.Clusters["quorum"]
	c := q.Client
	const name = "console-operator"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: name}}
	if err := c.Create(ctx, sa); err != nil {
		return "", err
	}
	group := srv1alpha1.GroupVersion.Group
	if err := c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{group}, Resources: []string{"failoverrequests", "testfailovers", "protectionrequests"}, Verbs: []string{"create"}},
	}}); err != nil {
		return "", err
	}
	if err := c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: drNamespace, Name: name}}}); err != nil {
		return "", err
	}
	token, err := harness.ServiceAccountToken(ctx, c, drNamespace, name, 24*time.Hour)
	if err != nil {
		return "", err
	}
	ca := filepath.Join(sb.o.workDir, "quorum-ca.crt")
	if err := os.WriteFile(ca, q.Config.CAData, 0o600); err != nil {
		return "", err
	}
	oidcArgs, err := sb.consoleOIDC(ctx, name)
	if err != nil {
		return "", err
	}
	p := &process.Process{Name: "siterecovery-console", Bin: filepath.Join(sb.o.binDir, "siterecovery-console"),
		Args: append([]string{"--listen=" + sb.o.consoleAddr, "--api-server=" + q.Config.Host, "--api-ca-file=" + ca, "--namespaces=" + drNamespace}, oidcArgs...)}
	if err := p.Start(filepath.Join(sb.o.workDir, "logs")); err != nil {
		return "", fmt.Errorf("starting the console: %w (did `make build` run?)", err)
	}
	sb.procs = append(sb.procs, p)
	tokenFile := filepath.Join(sb.o.workDir, "console-operator.token")
	return token, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600)
}

func (sb *sandbox) printConsole(token string) {
	fmt.Printf(`
Web console: https://%s/ (a certificate the console made at start: the browser asks once to accept it)
  sign in with this operator token (also in %s):
%s
`, sb.o.consoleAddr, filepath.Join(sb.o.workDir, "console-operator.token"), token)
	sb.printOIDC()
}
