package charts

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestPGControllerSecretsOnlyWhereTheKeyLives installs the workload chart's
// pg-controller roles in a real API server and acts as pg-controller's
// ServiceAccount: it reads the VolSync key where the quorum tier puts it (the
// DR namespace) and copies and deletes it in the application namespaces of
// volsync.applicationNamespaces, and reads, lists or writes no Secret
// anywhere else (kube-system, an unlisted namespace, the whole cluster); in a
// listed namespace it writes no Secret but the key's (no token Secret, no
// application Secret).
func TestPGControllerSecretsOnlyWhereTheKeyLives(t *testing.T) {
	s := scheme.New()
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: s}, harness.Primary)
	cluster := zone.Clusters[harness.Primary]
	admin, ctx := cluster.Client, t.Context()

	values := map[string]any{
		"quorumAccess": map[string]any{"drNamespaces": []any{"dr-y"}},
		"volsync":      map[string]any{"applicationNamespaces": []any{"app-y"}},
	}
	for _, ns := range []string{"siterecovery-system", "app-y", "app-z"} {
		require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	rbac := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
	objs := renderValues(t, "workload-control-plane", "siterecovery-system", values)
	// Each namespace's Role is named for the kind of namespace it serves,
	// not for one of its rights (freeze came beside the VolSync key).
	for ns, name := range map[string]string{"dr-y": "siterecovery-pg-controller-dr-namespace", "app-y": "siterecovery-pg-controller-application-namespace"} {
		require.NotNil(t, find(objs, "Role", ns, name), "Role %s/%s", ns, name)
		require.NotNil(t, find(objs, "RoleBinding", ns, name), "RoleBinding %s/%s", ns, name)
	}
	for _, obj := range objs {
		name := obj.GetLabels()["app.kubernetes.io/name"]
		if slices.Contains(rbac, obj.GetKind()) && (obj.GetKind() == "Namespace" || name == "pg-controller") {
			require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	secret := func(ns, name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"psk.txt": []byte("k")}}
	}
	for _, sec := range []*corev1.Secret{secret("dr-y", "d-vs-secret"), secret("kube-system", "victim"), secret("app-z", "victim")} {
		require.NoError(t, admin.Create(ctx, sec))
	}

	cfg := rest.CopyConfig(cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:siterecovery-system:pg-controller",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:siterecovery-system", "system:authenticated"}}
	pg, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)
	dry := client.DryRunAll

	// The authorizer sees new roles, and the API server a new policy, within a moment.
	require.Eventually(t, func() bool {
		return pg.Get(ctx, client.ObjectKey{Namespace: "dr-y", Name: "d-vs-secret"}, &corev1.Secret{}) == nil
	}, 30*time.Second, 100*time.Millisecond, "pg-controller never read the key in its DR namespace")
	tokenSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app-y", Name: "mint-vs-secret",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}}, Type: corev1.SecretTypeServiceAccountToken}
	require.Eventually(t, func() bool {
		err := pg.Create(ctx, tokenSecret.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "siterecovery-pg-controller-secrets")
	}, 30*time.Second, 100*time.Millisecond, "the Secret guard never refused a token Secret")
	require.NoError(t, admin.Create(ctx, secret("app-y", "app-credentials")))

	t.Run("freeze", func(t *testing.T) { checkPGControllerFreezeRights(t, pg, "app-y", "app-z") })
	t.Run("allowed", func(t *testing.T) {
		require.NoError(t, pg.Create(ctx, secret("app-y", "d-vs-secret"), dry), "copying the key into a listed application namespace")
		require.NoError(t, pg.Create(ctx, secret("app-y", "d-vs-secret")))
		require.NoError(t, pg.Get(ctx, client.ObjectKey{Namespace: "app-y", Name: "d-vs-secret"}, &corev1.Secret{}), "reading its copy")
		require.NoError(t, pg.Delete(ctx, secret("app-y", "d-vs-secret")), "deleting its copy")
	})

	forbidden := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		require.True(t, apierrors.IsForbidden(err), "%v", err)
	}
	t.Run("refused", func(t *testing.T) {
		forbidden(t, pg.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "victim"}, &corev1.Secret{}))
		forbidden(t, pg.Get(ctx, client.ObjectKey{Namespace: "app-z", Name: "victim"}, &corev1.Secret{}))
		forbidden(t, pg.List(ctx, &corev1.SecretList{}))
		forbidden(t, pg.List(ctx, &corev1.SecretList{}, client.InNamespace("dr-y")))
		forbidden(t, pg.Create(ctx, secret("app-z", "d-vs-secret"), dry))
		forbidden(t, pg.Create(ctx, secret("dr-y", "minted"), dry))
		forbidden(t, pg.Delete(ctx, secret("dr-y", "d-vs-secret"), dry))
		forbidden(t, pg.Delete(ctx, secret("kube-system", "victim"), dry))

		// In a listed namespace, only the key's Secret.
		keyOnly := "pg-controller writes only the VolSync movers' pre-shared-key Secrets"
		guarded := func(err error) {
			t.Helper()
			require.Error(t, err)
			require.Contains(t, err.Error(), keyOnly)
		}
		guarded(pg.Create(ctx, tokenSecret.DeepCopy(), dry))
		guarded(pg.Create(ctx, secret("app-y", "app-credentials-2"), dry))
		guarded(pg.Delete(ctx, secret("app-y", "app-credentials"), dry))
		twoKeys := secret("app-y", "x-vs-secret")
		twoKeys.Data["ca.crt"] = []byte("ca")
		guarded(pg.Create(ctx, twoKeys, dry))
	})
}
