package charts

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestGroupDiscardPathsNeedTheDisasterRole: taking hold-diverged or
// fenced-off off a ProtectionGroup on the quorum cluster may lose data (the
// diverged writes are discarded; an unplanned failover may run on stale
// data), so the quorum chart's policy asks for the group's name in
// siterecovery.trilio.io/confirm and the disaster-operator role, as the other
// disaster paths do. Ada administers the DR namespace (siterecovery-admin,
// which may patch groups) and is refused; Dana holds the disaster-operator
// role as well and is refused without the confirmation, with a message that
// says what to type, and admitted with it. A cluster admin, and Otto, who
// may update the groups' status, are refused without the confirmation as
// everyone else is: only the release's quorum-manager, which removes
// fenced-off itself after a failback has resynced the cluster, is exempt.
// Other writes of the group are not matched.
func TestGroupDiscardPathsNeedTheDisasterRole(t *testing.T) {
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, harness.Quorum)
	cluster := zone.Clusters[harness.Quorum]
	admin, ctx := cluster.Client, t.Context()
	const policy = "siterecovery-confirm-group-discard-" + disasterNS

	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: disasterNS}}))
	for _, obj := range renderValues(t, "protectionzone", "siterecovery-system", nil) {
		if obj.GetKind() == "ClusterRole" {
			require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	n := 0
	for _, obj := range renderValues(t, "quorum-control-plane", disasterNS, nil) {
		if (obj.GetKind() == "ValidatingAdmissionPolicy" || obj.GetKind() == "ValidatingAdmissionPolicyBinding") && obj.GetName() == policy {
			require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
			n++
		}
		if (obj.GetKind() == "Role" || obj.GetKind() == "RoleBinding") && obj.GetName() == "quorum-manager-"+disasterNS {
			require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	require.Equal(t, 2, n, "the quorum chart renders the policy and its binding")
	bindInDR(t, admin, "ada", "ClusterRole", "siterecovery-admin")
	bindInDR(t, admin, "dana", "ClusterRole", "siterecovery-admin")
	bindInDR(t, admin, "dana", "ClusterRole", "siterecovery-disaster-operator")
	require.NoError(t, admin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "root-cluster-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "root"}}}))
	require.NoError(t, admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: disasterNS, Name: "group-writer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"protectiongroups", "protectiongroups/status"},
			Verbs: []string{"get", "patch", "update"}}}}))
	bindInDR(t, admin, "otto", "Role", "group-writer")
	root := actingAs(t, cluster.Config, "root")
	otto := actingAs(t, cluster.Config, "otto")
	ada := actingAs(t, cluster.Config, "ada")
	dana := actingAs(t, cluster.Config, "dana")
	quorum := actingAs(t, cluster.Config, "system:serviceaccount:"+disasterNS+":quorum-manager-"+disasterNS,
		"system:serviceaccounts", "system:serviceaccounts:"+disasterNS)
	dry := client.DryRunAll

	g := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: disasterNS, Name: "web", Annotations: map[string]string{
		srv1alpha1.HoldDivergedAnnotation: "true", srv1alpha1.FencedOffAnnotation: "primary-cluster", srv1alpha1.FencedOffByAnnotation: "uid-1"}},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "web"}}}}
	require.NoError(t, admin.Create(ctx, g))
	annotate := func(c client.Client, annotations map[string]any) error {
		data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
		require.NoError(t, err)
		return c.Patch(ctx, g.DeepCopy(), client.RawPatch(types.MergePatchType, data), dry)
	}
	release := map[string]any{srv1alpha1.HoldDivergedAnnotation: nil}
	waitPolicy(t, policy, func() error { return annotate(ada, release) })

	const discard = "taking siterecovery.trilio.io/hold-diverged off ProtectionGroup web lets the writes its fenced-off cluster made while cut off be discarded, which cannot be undone"
	policyRefused(t, annotate(ada, map[string]any{srv1alpha1.HoldDivergedAnnotation: nil, srv1alpha1.ConfirmAnnotation: "web"}), policy,
		`user "ada" may not: `+discard+"; that needs the disaster-operator role (create on failoverrequests/disaster)")
	policyRefused(t, annotate(dana, release), policy,
		discard+`; confirm it by setting the annotation siterecovery.trilio.io/confirm: "web" (the group name) on the ProtectionGroup in the same write`)
	policyRefused(t, annotate(dana, map[string]any{srv1alpha1.HoldDivergedAnnotation: "false", srv1alpha1.ConfirmAnnotation: "dr-production"}), policy,
		`siterecovery.trilio.io/confirm: "web"`)
	// The exemption was "may update the groups' status", which every cluster
	// admin holds: now an admin confirms like everyone else.
	policyRefused(t, annotate(root, release), policy, discard+"; confirm it")
	policyRefused(t, annotate(otto, release), policy, discard+"; confirm it")
	policyRefused(t, annotate(otto, map[string]any{srv1alpha1.HoldDivergedAnnotation: nil, srv1alpha1.ConfirmAnnotation: "web"}), policy,
		`user "otto" may not: `+discard)
	require.NoError(t, annotate(root, map[string]any{srv1alpha1.HoldDivergedAnnotation: nil, srv1alpha1.ConfirmAnnotation: "web"}))
	require.NoError(t, annotate(dana, map[string]any{srv1alpha1.HoldDivergedAnnotation: nil, srv1alpha1.ConfirmAnnotation: "web"}))

	const forget = "changing siterecovery.trilio.io/fenced-off on ProtectionGroup web forgets that cluster primary-cluster was fenced off with diverged data: " +
		"an unplanned failover to it would run the group on that stale data"
	policyRefused(t, annotate(ada, map[string]any{srv1alpha1.FencedOffAnnotation: nil, srv1alpha1.ConfirmAnnotation: "web"}), policy, `user "ada" may not: `+forget)
	policyRefused(t, annotate(dana, map[string]any{srv1alpha1.FencedOffAnnotation: "dr-cluster"}), policy, forget+"; confirm it")
	policyRefused(t, annotate(root, map[string]any{srv1alpha1.FencedOffAnnotation: nil, srv1alpha1.FencedOffByAnnotation: nil}), policy, forget+"; confirm it")
	require.NoError(t, annotate(dana, map[string]any{srv1alpha1.FencedOffAnnotation: nil, srv1alpha1.ConfirmAnnotation: "web"}))
	require.NoError(t, annotate(quorum, map[string]any{srv1alpha1.FencedOffAnnotation: nil, srv1alpha1.FencedOffByAnnotation: nil}),
		"quorum-manager drops the record after a failback resynced the cluster")

	// A confirmation an earlier write left on the group confirms nothing more.
	g.Annotations[srv1alpha1.ConfirmAnnotation] = "web"
	require.NoError(t, admin.Update(ctx, g))
	policyRefused(t, annotate(dana, release), policy,
		`on the ProtectionGroup in the same write (the one an earlier write left there does not count: remove it first)`)
	require.NoError(t, annotate(dana, map[string]any{srv1alpha1.ConfirmAnnotation: nil}), "removing the old confirmation drops no guard")

	// Writes that drop no guard stay the admin's: another annotation, setting hold-diverged.
	require.NoError(t, annotate(ada, map[string]any{"team": "web"}))
	require.NoError(t, annotate(ada, map[string]any{srv1alpha1.HoldDivergedAnnotation: "true"}))
}
