package console_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/console/oidc"
	"github.com/siterecovery/siterecovery/internal/console/server"
	"github.com/siterecovery/siterecovery/internal/console/ui"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/oidcissuer"
)

// TestOIDCInBrowser clicks "Log in with OIDC", signs in on the test issuer's
// page and lands on the overview as that user, whom RBAC lets read the
// group; an ID token for another client is refused on the sign-in page with
// the reason. Past the ID token's refresh point the page's event stream is
// renewed: the new stream refreshes the token once, and changes keep
// arriving. The quorum API server trusts the issuer; no controller runs.
func TestOIDCInBrowser(t *testing.T) {
	chromium(t)
	const clientID, ns, groupName = "siterecovery-console", "dr-production", "oidc-pg"
	alice := oidcissuer.User{Name: "alice", Password: "alice-password", Email: "alice@example.com"}
	is := oidcissuer.Start(t, oidcissuer.Options{ClientID: clientID, ClientSecret: "console-secret", Users: []oidcissuer.User{alice}})
	s := scheme.New()
	z := harness.Start(t, harness.Options{Scheme: s, APIServerFlags: is.APIServerFlags(clientID)}, "quorum")
	c := z.Clusters["quorum"]
	ctx := context.Background()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "production"},
			Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
				{Name: "primary-cluster", Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "primary-kubeconfig"}},
				{Name: "dr-cluster", Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "dr-kubeconfig"}},
			}}},
		&srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: groupName},
			Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: "primary-cluster", ZoneRef: &srv1alpha1.LocalObjectReference{Name: "production"},
				VirtualMachines: []srv1alpha1.VirtualMachineReference{{Name: "vm-00", Namespace: "apps"}},
				Replication:     srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: 60}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice-viewer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "viewer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "oidc:" + alice.Email}}},
	} {
		require.NoError(t, c.Client.Create(ctx, o))
	}
	// The API server loads the issuer's keys in the background.
	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = is.IDToken(t, alice)
	asAlice, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return asAlice.Create(ctx, &authenticationv1.SelfSubjectReview{}) == nil },
		2*time.Minute, 250*time.Millisecond, "the API server never accepted the issuer's ID token")

	// The console's clock can be moved past the ID token's refresh point.
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	provider, err := oidc.New(oidc.Config{IssuerURL: is.URL, ClientID: clientID, ClientSecret: "console-secret",
		CAFile: is.CAFile, Scopes: []string{"email", "offline_access"}, UsernameClaim: "email", Now: now})
	require.NoError(t, err)
	consoleURL := serveHTTPS(t, server.New(server.Options{API: c.Config, Scheme: s, UI: ui.FS(), TLS: true,
		Namespaces: []string{ns}, LoginAttempts: 1000, OIDC: provider, Now: now, IdleTimeout: 2 * time.Hour}))

	// The issuer's certificate and the console's are their own, accepted by
	// the browser's ignore-certificate-errors.
	b := newBrowser(t, consoleURL)
	defer func() { t.Logf("screenshots:\n  %s", strings.Join(b.seen, "\n  ")) }()
	signIn := func() {
		b.run("open the console", chromedp.Navigate(consoleURL+"/"),
			chromedp.WaitVisible(chromedp.Search(`//button[normalize-space(.)='Log in with OIDC']`)))
		b.click("Log in with OIDC")
		b.run("the issuer's login page", chromedp.WaitVisible(chromedp.ID("username")))
		b.run("sign in at the issuer", chromedp.SendKeys(chromedp.ID("username"), alice.Name),
			chromedp.SendKeys(chromedp.ID("password"), alice.Password),
			chromedp.Click(chromedp.Search(`//button[normalize-space(.)='Sign in']`)))
	}

	b.run("open the console", chromedp.Navigate(consoleURL+"/"),
		chromedp.WaitVisible(chromedp.Search(`//button[normalize-space(.)='Log in with OIDC']`)))
	b.shot("oidc-login")
	b.accessible("login with OIDC")
	signIn()
	b.run("the overview", chromedp.WaitVisible(chromedp.Search(`//h1[normalize-space(.)='Overview']`)))
	b.waitText(groupName)
	b.waitText("oidc:alice@example.com")
	b.shot("oidc-overview")
	b.accessible("overview after OIDC sign-in")

	// The ID token lives an hour. Past its refresh point the overview's
	// event stream is told to renew; the page opens a new one at once,
	// whose request refreshes the token, and changes arrive on it. A group
	// created a moment before the new stream watches would not be reported,
	// so it is touched until the page shows it.
	before := is.Refreshes()
	is.SetLifetime(2 * time.Hour) // the refreshed token is not due at once
	offset.Store(int64(59*time.Minute + 30*time.Second))
	require.Eventually(t, func() bool { return is.Refreshes() > before }, timeout, 100*time.Millisecond,
		"the page's new event stream never refreshed the ID token")
	const renewed = "oidc-pg-renewed"
	pg := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: renewed},
		Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: "primary-cluster", ZoneRef: &srv1alpha1.LocalObjectReference{Name: "production"},
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Name: "vm-01", Namespace: "apps"}}}}
	require.NoError(t, c.Client.Create(ctx, pg))
	n := 0
	require.Eventually(t, func() bool {
		if eval[bool](b, "is the new group shown", `document.body.innerText.includes('`+renewed+`')`) {
			return true
		}
		n++
		pg.Annotations = map[string]string{"test.siterecovery.trilio.io/poke": strconv.Itoa(n)}
		require.NoError(t, c.Client.Update(ctx, pg))
		return false
	}, timeout, 500*time.Millisecond, "a change after the renewal never reached the page")
	require.Equal(t, before+1, is.Refreshes(), "the ID token is refreshed once, not by each request")
	b.shot("oidc-overview-after-refresh")
	offset.Store(0)

	// An ID token minted for another client is refused, with the reason.
	is.SetAudience("another-client")
	b.click("Sign out")
	signIn()
	b.waitText("the ID token is for another client")
	b.shot("oidc-refused")
	b.accessible("refused OIDC sign-in")
}
