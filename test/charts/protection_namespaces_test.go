package charts

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestQuorumAdmissionIsolatesProtectedNamespaces installs the quorum chart's
// protection-namespaces policy of two releases in a real API server: dr-staging,
// whose protection.allowedNamespaces is [apps], and dr-empty with the default
// (none). An admin of dr-staging, who may write its ProtectionRequests and
// ProtectionGroups, tries to protect a VM of prod-apps, another team's
// namespace: refused, naming the value; a VM of apps is admitted. A group that
// listed a prod-apps VM before the value changed may lose VMs, not gain one.
func TestQuorumAdmissionIsolatesProtectedNamespaces(t *testing.T) {
	s := scheme.New()
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: s}, harness.Quorum)
	cluster := zone.Clusters[harness.Quorum]
	admin := cluster.Client
	ctx := t.Context()

	// A group made before the policy: it protects apps/web and prod-apps/db.
	for _, ns := range []string{"dr-staging", "dr-empty"} {
		require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	old := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr-staging", Name: "legacy"},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "web"}, {Namespace: "prod-apps", Name: "db"}}}}
	require.NoError(t, admin.Create(ctx, old))

	for ns, values := range map[string]map[string]any{
		"dr-staging": {"protection": map[string]any{"allowedNamespaces": []any{"apps"}}},
		"dr-empty":   nil,
	} {
		n := 0
		for _, obj := range renderValues(t, "quorum-control-plane", ns, values) {
			switch obj.GetKind() {
			case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
				if strings.HasPrefix(obj.GetName(), "siterecovery-protection-namespaces-") {
					require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
					n++
				}
			}
		}
		require.Equal(t, 2, n, "release %s renders the policy and its binding", ns)
		// dana administers the DR namespace's requests and groups.
		require.NoError(t, admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dr-admin"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"protectionrequests", "protectiongroups"}, Verbs: []string{"*"}}}}))
		require.NoError(t, admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dr-admin-dana"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "dr-admin"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "dana"}}}))
	}
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "dana", Groups: []string{"system:authenticated"}}
	dana, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)
	dry := client.DryRunAll

	protect := func(drNamespace, vmNamespace string) *srv1alpha1.ProtectionRequest {
		return &srv1alpha1.ProtectionRequest{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: "protect-db"},
			Spec: srv1alpha1.ProtectionRequestSpec{VirtualMachine: srv1alpha1.VirtualMachineReference{Namespace: vmNamespace, Name: "db"},
				ZoneRef: srv1alpha1.LocalObjectReference{Name: "production"}, ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "db"}}}
	}
	// The API server loads each policy and binding on its own: wait until
	// both releases' policies refuse (CI once saw dr-empty's not yet loaded
	// when dr-staging's was).
	for drNamespace, vmNamespace := range map[string]string{"dr-staging": "prod-apps", "dr-empty": "apps"} {
		policy := "siterecovery-protection-namespaces-" + drNamespace
		require.Eventually(t, func() bool {
			err := dana.Create(ctx, protect(drNamespace, vmNamespace), dry)
			return err != nil && strings.Contains(err.Error(), policy)
		}, 30*time.Second, 100*time.Millisecond, "policy %s never refused a request", policy)
	}

	refused := func(t *testing.T, err error, says ...string) {
		t.Helper()
		require.Error(t, err)
		require.Contains(t, err.Error(), "siterecovery-protection-namespaces-")
		for _, s := range says {
			require.Contains(t, err.Error(), s)
		}
	}
	const notAllowed = "may not be protected from DR namespace dr-staging: its namespace is not in protection.allowedNamespaces of the quorum-control-plane release in DR namespace dr-staging (apps)"
	t.Run("another team's namespace", func(t *testing.T) {
		refused(t, dana.Create(ctx, protect("dr-staging", "prod-apps"), dry), "VirtualMachine prod-apps/db "+notAllowed)
		g := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr-staging", Name: "mixed"},
			Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "web"}, {Namespace: "prod-apps", Name: "db"}}}}
		refused(t, dana.Create(ctx, g, dry), "VirtualMachine prod-apps/db "+notAllowed)
		legacy := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, dana.Get(ctx, client.ObjectKeyFromObject(old), legacy))
		legacy.Spec.VirtualMachines = append(legacy.Spec.VirtualMachines, srv1alpha1.VirtualMachineReference{Namespace: "prod-apps", Name: "cache"})
		refused(t, dana.Update(ctx, legacy, dry), "VirtualMachine prod-apps/cache "+notAllowed)
	})

	t.Run("nothing listed", func(t *testing.T) {
		refused(t, dana.Create(ctx, protect("dr-empty", "apps"), dry),
			"no application namespace may be protected from DR namespace dr-empty: protection.allowedNamespaces of the quorum-control-plane release in DR namespace dr-empty is empty")
	})

	t.Run("allowed", func(t *testing.T) {
		require.NoError(t, dana.Create(ctx, protect("dr-staging", "apps"), dry), "a VM of apps")
		g := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr-staging", Name: "web"},
			Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "web"}}}}
		require.NoError(t, dana.Create(ctx, g, dry), "a group of apps VMs")
		legacy := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, dana.Get(ctx, client.ObjectKeyFromObject(old), legacy))
		legacy.Spec.VirtualMachines = legacy.Spec.VirtualMachines[1:]
		require.NoError(t, dana.Update(ctx, legacy, dry), "a group may lose VMs of a namespace no longer listed (unprotect)")
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(old), legacy))
		legacy.Labels = map[string]string{"team": "db"}
		require.NoError(t, dana.Update(ctx, legacy, dry), "other edits of such a group pass")
	})
}
