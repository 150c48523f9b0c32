package charts

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// ownedDRBDResource is a DRBDResource of DR namespace drNamespace (by label,
// "" for none) in namespace apps.
func ownedDRBDResource(name, drNamespace string) *srv1alpha1.DRBDResource {
	r := &srv1alpha1.DRBDResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: map[string]string{srv1alpha1.ProtectionRequestLabel: "protect-" + name}},
		Spec: srv1alpha1.DRBDResourceSpec{NodeName: "node-1", NodeID: 1, Port: 7000, Role: srv1alpha1.RoleSecondary,
			Volumes: []srv1alpha1.DRBDVolume{{Number: 0, Minor: 1000, BackingPVC: &srv1alpha1.LocalObjectReference{Name: name + "-disk"}}},
			Peers:   []srv1alpha1.DRBDPeer{{NodeName: "peer-1", NodeID: 0, Address: "10.0.1.1", Port: 7000}}},
	}
	if drNamespace != "" {
		r.Labels[srv1alpha1.DRNamespaceLabel] = drNamespace
	}
	return r
}

// TestDRBDResourceOwnerPolicy installs the workload chart's DRBDResource owner
// policy in a real API server and writes DRBDResources as each identity would:
// only the quorum identity of the DR namespace the object names writes it,
// pg-controller changes only the role, the agent only the status and its
// finalizer; another DR namespace's quorum identity, or any other user with
// RBAC rights on DRBDResources, is refused on create, update and delete.
func TestDRBDResourceOwnerPolicy(t *testing.T) {
	s := scheme.New()
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: s}, harness.Primary)
	cluster := zone.Clusters[harness.Primary]
	admin, ctx := cluster.Client, t.Context()
	for _, ns := range []string{"siterecovery-system", "apps"} {
		require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	values := map[string]any{"quorumAccess": map[string]any{"drNamespaces": []any{"dr-production", "dr-staging"}}}
	installed := 0
	for _, obj := range renderValues(t, "workload-control-plane", "siterecovery-system", values) {
		if obj.GetLabels()["app.kubernetes.io/name"] == "drbdresource-owner" {
			require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
			installed++
		}
	}
	require.Equal(t, 2, installed, "the policy and its binding")

	// Every identity may write DRBDResources as far as RBAC goes: what stops
	// the wrong ones is the policy.
	users := map[string]string{
		"production": "system:serviceaccount:dr-production:quorum-manager",
		"staging":    "system:serviceaccount:dr-staging:quorum-manager",
		"agent":      "system:serviceaccount:siterecovery-system:drbd-node-agent",
		"pg":         "system:serviceaccount:siterecovery-system:pg-controller",
		"mallory":    "mallory",
	}
	require.NoError(t, admin.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "drbd-writer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"drbdresources", "drbdresources/status"}, Verbs: []string{"*"}}}}))
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "drbd-writer"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "drbd-writer"}}
	as := map[string]client.Client{}
	for who, name := range users {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name})
		cfg := rest.CopyConfig(cluster.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: []string{"system:authenticated"}}
		c, err := client.New(cfg, client.Options{Scheme: s})
		require.NoError(t, err)
		as[who] = c
	}
	require.NoError(t, admin.Create(ctx, binding))
	const policy = "siterecovery-drbdresource-owner"
	require.Eventually(t, func() bool {
		err := as["mallory"].Create(ctx, ownedDRBDResource("probe", "dr-production"), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), policy)
	}, 30*time.Second, 100*time.Millisecond, "the policy never refused a foreign user")
	refusedBy := func(t *testing.T, err error, says string) {
		t.Helper()
		require.Error(t, err)
		require.Contains(t, err.Error(), policy)
		require.Contains(t, err.Error(), says)
	}
	get := func(name string) *srv1alpha1.DRBDResource {
		r := &srv1alpha1.DRBDResource{}
		require.NoError(t, admin.Get(ctx, types.NamespacedName{Namespace: "apps", Name: name}, r))
		return r
	}
	owner := "only the quorum-manager of DR namespace dr-production writes it"

	t.Run("create", func(t *testing.T) {
		require.NoError(t, as["production"].Create(ctx, ownedDRBDResource("vm-1", "dr-production")), "its own DR namespace's quorum identity")
		refusedBy(t, as["staging"].Create(ctx, ownedDRBDResource("vm-2", "dr-production"), client.DryRunAll), owner)
		refusedBy(t, as["mallory"].Create(ctx, ownedDRBDResource("vm-2", "dr-production"), client.DryRunAll), "mallory may not create DRBDResource vm-2")
		refusedBy(t, as["agent"].Create(ctx, ownedDRBDResource("vm-2", "dr-production"), client.DryRunAll), owner)
		refusedBy(t, as["production"].Create(ctx, ownedDRBDResource("vm-2", ""), client.DryRunAll), "needs the label siterecovery.trilio.io/dr-namespace")
		refusedBy(t, as["production"].Create(ctx, ownedDRBDResource("vm-2", "dr-elsewhere"), client.DryRunAll), `it has "dr-elsewhere"`)
	})

	t.Run("update", func(t *testing.T) {
		r := get("vm-1")
		r.Spec.Peers[0].Address = "10.0.1.2"
		require.NoError(t, as["production"].Update(ctx, r, client.DryRunAll), "the owner changes the peers")
		refusedBy(t, as["staging"].Update(ctx, r.DeepCopy(), client.DryRunAll), owner)
		refusedBy(t, as["mallory"].Update(ctx, r.DeepCopy(), client.DryRunAll), "mallory may not update")
		refusedBy(t, as["agent"].Update(ctx, r.DeepCopy(), client.DryRunAll), "the drbd-node-agent only its status and finalizer")
		refusedBy(t, as["pg"].Update(ctx, r.DeepCopy(), client.DryRunAll), "pg-controller changes only its role, forcePromotion and quorum")

		relabelled := get("vm-1")
		relabelled.Labels[srv1alpha1.DRNamespaceLabel] = "dr-staging"
		refusedBy(t, as["production"].Update(ctx, relabelled, client.DryRunAll), "cannot change")
		refusedBy(t, as["staging"].Update(ctx, relabelled, client.DryRunAll), "cannot change")

		promote := get("vm-1")
		promote.Spec.Role, promote.Spec.ForcePromotion = srv1alpha1.RolePrimary, true
		promote.Spec.Quorum = srv1alpha1.QuorumForRole(srv1alpha1.RolePrimary)
		require.NoError(t, as["pg"].Update(ctx, promote, client.DryRunAll), "pg-controller applies a failover's role")

		withFinalizer := get("vm-1")
		withFinalizer.Finalizers = append(withFinalizer.Finalizers, "siterecovery.trilio.io/drbd-node-agent")
		require.NoError(t, as["agent"].Update(ctx, withFinalizer), "the agent adds its finalizer")
		st := get("vm-1")
		st.Status.Address = "10.0.0.1"
		require.NoError(t, as["agent"].Status().Update(ctx, st), "the agent writes the status")
		refusedBy(t, as["mallory"].Status().Update(ctx, get("vm-1"), client.DryRunAll), "mallory may not update DRBDResource vm-1/status")
		other := get("vm-1")
		other.Finalizers = append(other.Finalizers, "example.com/keep")
		refusedBy(t, as["agent"].Update(ctx, other, client.DryRunAll), "the drbd-node-agent only its status and finalizer")
	})

	t.Run("delete", func(t *testing.T) {
		refusedBy(t, as["staging"].Delete(ctx, get("vm-1"), client.DryRunAll), owner)
		refusedBy(t, as["mallory"].Delete(ctx, get("vm-1"), client.DryRunAll), "mallory may not delete")
		refusedBy(t, as["agent"].Delete(ctx, get("vm-1"), client.DryRunAll), owner)
		require.NoError(t, as["production"].Delete(ctx, get("vm-1")))
		// The agent lets it go: it removes its finalizer.
		r := get("vm-1")
		r.Finalizers = nil
		require.NoError(t, as["agent"].Update(ctx, r))
	})
}
