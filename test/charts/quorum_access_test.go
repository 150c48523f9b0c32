package charts

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestWorkloadChartGrantsQuorumAccess checks the identity the workload chart
// gives the quorum-manager of each DR namespace: the DR namespace, a
// ServiceAccount in it, the cluster-wide rules generated from the quorum
// controllers' namespace=workload-cluster markers, and the DR namespace's own
// rules from their namespace=workload-dr-namespace markers, each bound to that
// ServiceAccount only.
func TestWorkloadChartGrantsQuorumAccess(t *testing.T) {
	drNamespaces := []any{"dr-production", "dr-staging"}
	objs := renderValues(t, "workload-control-plane", "siterecovery-system",
		map[string]any{"quorumAccess": map[string]any{"drNamespaces": drNamespaces}})
	clusterWide := generatedRole(t, "quorum-manager", "Role", "workload-cluster")
	inNamespace := generatedRole(t, "quorum-manager", "Role", "workload-dr-namespace")

	role := func(kind, namespace, name string) *rbacv1.ClusterRole {
		obj := find(objs, kind, namespace, name)
		require.NotNil(t, obj, "no %s %s/%s rendered", kind, namespace, name)
		r := &rbacv1.ClusterRole{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, r))
		return r
	}
	require.Equal(t, clusterWide, role("ClusterRole", "", "siterecovery-quorum-access").Rules)
	for _, v := range drNamespaces {
		ns := v.(string)
		require.NotNil(t, find(objs, "Namespace", "", ns), "namespace %s", ns)
		require.NotNil(t, find(objs, "ServiceAccount", ns, "quorum-manager"))
		require.Equal(t, inNamespace, role("Role", ns, "quorum-manager").Rules)
		for _, b := range []struct{ kind, namespace, name, roleKind, roleName string }{
			{"ClusterRoleBinding", "", "siterecovery-quorum-access-" + ns, "ClusterRole", "siterecovery-quorum-access"},
			{"RoleBinding", ns, "quorum-manager", "Role", "quorum-manager"},
		} {
			obj := find(objs, b.kind, b.namespace, b.name)
			require.NotNil(t, obj, "no %s %s", b.kind, b.name)
			rb := &rbacv1.RoleBinding{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, rb))
			require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: b.roleKind, Name: b.roleName}, rb.RoleRef)
			require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "quorum-manager", Namespace: ns}}, rb.Subjects)
		}
	}
}

// TestQuorumAccessIsLeastPrivilege states the limits of the generated workload
// rules a reviewer relies on: no Secrets beyond creating them in its DR
// namespace, no wildcards, no RBAC or
// impersonation, Nodes only read and patched (the lost-quorum taint),
// StorageClasses only read, the DRBDAllocation (the port and minor claims every
// DR namespace shares) only read, created and updated: never listed across
// names, nor deleted, which would drop every namespace's claims.
func TestQuorumAccessIsLeastPrivilege(t *testing.T) {
	// In its own DR namespace only, it may create Secrets (the VolSync
	// movers' pre-shared key, which pg-controller copies on): anywhere else
	// creating a Secret would mint tokens for that namespace's ServiceAccounts.
	// Patch adds the group label to a key copied before the label existed
	// (internal/quorum/drpc labelKey); no get, list or watch.
	for _, r := range generatedRole(t, "quorum-manager", "Role", "workload-dr-namespace") {
		if slices.Contains(r.Resources, "secrets") {
			require.Equal(t, []string{"secrets"}, r.Resources)
			require.Equal(t, []string{"create", "patch"}, r.Verbs, "the key is only created, and labelled; reading Secrets there is not needed")
		}
	}
	rules := generatedRole(t, "quorum-manager", "Role", "workload-cluster")
	for _, r := range generatedRole(t, "quorum-manager", "Role", "workload-dr-namespace") {
		if !slices.Contains(r.Resources, "secrets") {
			rules = append(rules, r)
		}
	}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			require.NotEqual(t, "*", g)
			require.NotEqual(t, rbacv1.GroupName, g, "quorum-manager needs no RBAC rights on a workload cluster")
		}
		for _, res := range r.Resources {
			require.NotContains(t, []string{"*", "secrets", "serviceaccounts", "serviceaccounts/token"}, res)
			switch res {
			case "nodes":
				require.ElementsMatch(t, []string{"get", "list", "patch"}, r.Verbs)
			case "storageclasses":
				require.Subset(t, []string{"get", "list", "watch"}, r.Verbs)
			case "drbdallocations":
				require.ElementsMatch(t, []string{"get", "create", "update"}, r.Verbs)
			}
		}
		require.NotContains(t, r.Verbs, "*")
		require.NotContains(t, r.Verbs, "impersonate")
		require.NotContains(t, r.Verbs, "escalate")
		require.NotContains(t, r.Verbs, "bind")
	}
}

// TestWorkloadChartWithoutDRNamespaces renders no quorum identity at all.
func TestWorkloadChartWithoutDRNamespaces(t *testing.T) {
	for _, obj := range render(t, "workload-control-plane", "siterecovery-system") {
		require.NotEqual(t, "quorum-access", obj.GetLabels()["app.kubernetes.io/name"], "%s %s", obj.GetKind(), obj.GetName())
	}
}

func find(objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	return nil
}
