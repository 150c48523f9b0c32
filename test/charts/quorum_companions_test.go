package charts

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/quorum/testfailover"
)

// companionLabels are the labels pg-sync puts on a companion copy of
// dr-namespace's group (internal/quorum/pgsync companionLabels).
func companionLabels(drNamespace string) map[string]string {
	return map[string]string{srv1alpha1.DRNamespaceLabel: drNamespace, "siterecovery.trilio.io/created-by": "pg-sync",
		srv1alpha1.ProtectionGroupLabel: "web", srv1alpha1.ZoneLabel: "zone"}
}

// TestQuorumGuardCompanionCopies acts, on a real API server, as the quorum
// identity the workload chart installs with quorumAccess.companionSecrets:
// it may write ConfigMaps, Secrets and Services in an application namespace
// only as pg-sync's labelled companion copies of its own DR namespace, and
// change or delete only those; a Service copy takes no external IPs and a
// Secret is never a service account token. The release also sets
// quorumAccess.testFailover.allowHookSidecars (one API server for the
// opt-ins): a test copy may then keep its hook sidecars, and nothing else.
func TestQuorumGuardCompanionCopies(t *testing.T) {
	g := startGuardedWith(t, map[string]any{"companionSecrets": true,
		"testFailover": map[string]any{"allowHookSidecars": true}})
	admin, quorum, ctx := g.admin, g.quorum, t.Context()
	dry := client.DryRunAll
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: labels}
	}
	own := companionLabels("dr-production")
	service := func(labels map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: meta("db", labels), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "db"}, Ports: []corev1.ServicePort{{Port: 5432, Protocol: corev1.ProtocolTCP}}}}
	}

	t.Run("allowed", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: meta("db-config", own), Data: map[string]string{"k": "v"}}
		require.NoError(t, quorum.Create(ctx, cm), "a ConfigMap copy")
		before := cm.DeepCopy()
		cm.Data["k"] = "w"
		require.NoError(t, quorum.Patch(ctx, cm, client.MergeFrom(before)), "changing its own copy")
		require.NoError(t, quorum.Delete(ctx, cm), "deleting its own copy")
		require.NoError(t, quorum.Create(ctx, &corev1.Secret{ObjectMeta: meta("db-password", own),
			StringData: map[string]string{"password": "x"}}, dry), "a Secret copy")
		require.NoError(t, quorum.Create(ctx, service(own), dry), "a LoadBalancer Service copy")
		err := quorum.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "any"}, &corev1.Secret{})
		require.True(t, apierrors.IsNotFound(err), "reading a Secret at the source is allowed: %v", err)
	})

	t.Run("hook sidecars allowed", func(t *testing.T) { checkHookSidecarsAllowed(t, g) })

	companionRule := "outside its DR namespace only as companion copies"
	t.Run("refused", func(t *testing.T) {
		other := companionLabels("dr-staging")
		notCreated := companionLabels("dr-production")
		delete(notCreated, "siterecovery.trilio.io/created-by")
		for name, labels := range map[string]map[string]string{"unlabelled": nil, "another DR namespace's": other, "not pg-sync's": notCreated} {
			refused(t, quorum.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta("cm", labels)}, dry), companionRule)
			refused(t, quorum.Create(ctx, &corev1.Secret{ObjectMeta: meta("s", labels)}, dry), companionRule)
			refused(t, quorum.Create(ctx, service(labels), dry), "or as companion copies")
			t.Logf("%s ConfigMap, Secret and Service: refused", name)
		}
		token := &corev1.Secret{ObjectMeta: meta("token", own), Type: corev1.SecretTypeServiceAccountToken}
		token.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
		refused(t, quorum.Create(ctx, token, dry), "no service account token Secret")
		external := service(own)
		external.Spec.ExternalIPs = []string{"192.0.2.10"}
		refused(t, quorum.Create(ctx, external, dry), "or as companion copies")

		// The application's own objects: neither changed nor deleted.
		mine := &corev1.ConfigMap{ObjectMeta: meta("app-config", nil), Data: map[string]string{"k": "v"}}
		require.NoError(t, admin.Create(ctx, mine))
		before := mine.DeepCopy()
		mine.Data["k"] = "w"
		changes := "changes or deletes only what carries its label"
		refused(t, quorum.Patch(ctx, mine, client.MergeFrom(before), dry), changes)
		refused(t, quorum.Delete(ctx, mine, dry), changes)
		// Its own Service copy takes no external IPs later either.
		copySvc := service(own)
		require.NoError(t, admin.Create(ctx, copySvc))
		beforeSvc := copySvc.DeepCopy()
		copySvc.Spec.ExternalIPs = []string{"192.0.2.10"}
		refused(t, quorum.Patch(ctx, copySvc, client.MergeFrom(beforeSvc), dry), "sets no external IPs on a Service")
	})
}

// TestQuorumAccessSecretsOptIn: the quorum identity gets rights on Secrets
// outside its DR namespace only with quorumAccess.companionSecrets, in a role
// of their own bound to each DR namespace's identity.
func TestQuorumAccessSecretsOptIn(t *testing.T) {
	values := func(on bool) map[string]any {
		return map[string]any{"quorumAccess": map[string]any{"drNamespaces": []any{"dr-production"}, "companionSecrets": on}}
	}
	off := renderValues(t, "workload-control-plane", "siterecovery-system", values(false))
	require.Nil(t, find(off, "ClusterRole", "", "siterecovery-quorum-access-companion-secrets"))
	on := renderValues(t, "workload-control-plane", "siterecovery-system", values(true))
	role := find(on, "ClusterRole", "", "siterecovery-quorum-access-companion-secrets")
	require.NotNil(t, role)
	r := &rbacv1.ClusterRole{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(role.Object, r))
	require.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"},
		Verbs: []string{"get", "list", "create", "patch", "delete"}}}, r.Rules)
	require.NotNil(t, find(on, "ClusterRoleBinding", "", "siterecovery-quorum-access-companion-secrets-dr-production"))
}

// TestQuorumAccessSettings: each DR namespace gets the ConfigMap
// quorum-manager reads (internal/quorum/remote/access.go), saying whether the
// guard admits hook sidecars on test copies (false unless the value sets it)
// and which application namespaces the release lists for that DR namespace
// (none unless listed), which a protection checks before it acts.
func TestQuorumAccessSettings(t *testing.T) {
	for _, on := range []bool{false, true} {
		qa := map[string]any{"drNamespaces": []any{"dr-production", "dr-staging"},
			"applicationNamespaces": map[string]any{"dr-production": []any{"apps", "billing"}}}
		if on {
			qa["testFailover"] = map[string]any{"allowHookSidecars": true}
		}
		objs := renderValues(t, "workload-control-plane", "siterecovery-system", map[string]any{"quorumAccess": qa})
		for ns, listed := range map[string]string{"dr-production": "apps,billing", "dr-staging": ""} {
			cm := find(objs, "ConfigMap", ns, testfailover.SettingsConfigMap)
			require.NotNil(t, cm, "%s's settings", ns)
			data, _, err := unstructured.NestedStringMap(cm.Object, "data")
			require.NoError(t, err)
			require.Equal(t, map[string]string{testfailover.AllowHookSidecarsKey: strconv.FormatBool(on), remote.ApplicationNamespacesKey: listed}, data)
		}
	}
}
