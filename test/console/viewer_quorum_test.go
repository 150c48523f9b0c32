package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// viewerQuorum starts a quorum cluster alone (no controller runs) whose DR
// namespace holds the DRBD zone "production", the given objects, created in
// order, and a service account that may only read siterecovery's kinds
// there. It returns the cluster and that viewer's token, for a test that
// writes the statuses the controllers would and reads them in the console.
func viewerQuorum(t *testing.T, objs ...client.Object) (*harness.Cluster, string) {
	t.Helper()
	c := harness.Start(t, harness.Options{Scheme: scheme.New()}, env.Quorum).Clusters[env.Quorum]
	ctx := context.Background()
	ns := env.Namespace
	all := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "production"},
			Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
				{Name: env.Primary, Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "primary-kubeconfig"}},
				{Name: env.DR, Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "dr-kubeconfig"}},
			}}},
	}
	all = append(all, objs...)
	all = append(all,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "viewer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "viewer"}}})
	for _, o := range all {
		require.NoError(t, c.Client.Create(ctx, o))
	}
	token, err := harness.ServiceAccountToken(ctx, c.Client, ns, "viewer", time.Hour)
	require.NoError(t, err)
	return c, token
}
