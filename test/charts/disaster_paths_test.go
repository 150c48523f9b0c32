package charts

import (
	"context"
	"encoding/json"
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

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// disasterNS is the DR namespace of the disaster-path tests.
const disasterNS = "dr-production"

// TestEveryDisasterPathNeedsTheDisasterRole: an action that may lose data
// needs the disaster-operator role and a typed confirmation whichever way it
// is asked, and the API server itself refuses it otherwise (the
// protectionzone chart's ValidatingAdmissionPolicies, no webhook). Olivia
// holds the operator role and may also patch requests (a Role "annotator"),
// so that the update paths are tried with her too; Dana holds the
// disaster-operator role, which may patch requests to confirm. Each path is tried as Olivia and refused, as Dana without the
// confirmation and refused with a message that says what to type, and as
// Dana with it and admitted; quorum-manager's own writes, with the rights the
// quorum chart grants it, are admitted.
func TestEveryDisasterPathNeedsTheDisasterRole(t *testing.T) {
	s := scheme.New()
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: s}, harness.Quorum)
	cluster := zone.Clusters[harness.Quorum]
	admin := cluster.Client
	ctx := t.Context()

	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: disasterNS}}))
	for _, obj := range renderValues(t, "protectionzone", "siterecovery-system", nil) {
		switch obj.GetKind() {
		case "ClusterRole", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	// quorum-manager's Role and binding, as its chart renders them.
	for _, obj := range renderValues(t, "quorum-control-plane", disasterNS, nil) {
		if (obj.GetKind() == "Role" || obj.GetKind() == "RoleBinding") && obj.GetName() == "quorum-manager-"+disasterNS {
			require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	require.NoError(t, admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: disasterNS, Name: "annotator"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"failoverrequests", "protectionrequests"}, Verbs: []string{"patch"}}}}))
	bindInDR(t, admin, "olivia", "ClusterRole", "siterecovery-operator")
	bindInDR(t, admin, "dana", "ClusterRole", "siterecovery-disaster-operator")
	bindInDR(t, admin, "olivia", "Role", "annotator")
	olivia := actingAs(t, cluster.Config, "olivia")
	dana := actingAs(t, cluster.Config, "dana")
	quorum := actingAs(t, cluster.Config, "system:serviceaccount:"+disasterNS+":quorum-manager-"+disasterNS,
		"system:serviceaccounts", "system:serviceaccounts:"+disasterNS)
	dry := client.DryRunAll

	t.Run("DRPlacementControl Failover", func(t *testing.T) {
		const policy = "siterecovery-confirm-drpc-failover"
		failover := drpcOf("web-failover")
		failover.Spec.Action, failover.Spec.FailoverCluster = drv1alpha1.ActionFailover, "dr-cluster"
		failover.Annotations = map[string]string{srv1alpha1.ConfirmAnnotation: "web"}
		waitPolicy(t, policy, func() error { return olivia.Create(ctx, failover.DeepCopy(), dry) })

		policyRefused(t, olivia.Create(ctx, failover.DeepCopy(), dry), policy,
			`user "olivia" may not ask DRPlacementControl web-failover for a Failover in dr-production: that needs the disaster-operator role (create on failoverrequests/disaster); a Relocate needs only the operator role`)
		require.NoError(t, dana.Create(ctx, failover.DeepCopy(), dry), "created asking for a Failover, confirmed")

		d := drpcOf("web")
		require.NoError(t, olivia.Create(ctx, d), "a DRPC that deploys needs only the operator role")
		toFailover := func(c client.Client, confirm string) error {
			patch := map[string]any{"spec": map[string]any{"action": "Failover", "failoverCluster": "dr-cluster"}}
			if confirm != "" {
				patch["metadata"] = map[string]any{"annotations": map[string]any{srv1alpha1.ConfirmAnnotation: confirm}}
			}
			return mergePatch(ctx, c, d, patch)
		}
		policyRefused(t, toFailover(olivia, "web"), policy, `user "olivia" may not ask DRPlacementControl web for a Failover`)
		policyRefused(t, toFailover(dana, ""), policy,
			`a Failover of DRPlacementControl web moves group web to dr-cluster without a final sync and may lose the writes not yet replicated; confirm it by setting the annotation siterecovery.trilio.io/confirm: "web" on the DRPlacementControl in the same write`)
		policyRefused(t, toFailover(dana, "dr-production"), policy, `siterecovery.trilio.io/confirm: "web"`)
		require.NoError(t, toFailover(dana, "web"))
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(d), d))
		require.Equal(t, drv1alpha1.ActionFailover, d.Spec.Action, "the Failover was written")

		// Writes that start no failover stay the operator's: a label on the
		// failed-over DRPC, and a Relocate back.
		require.NoError(t, mergePatch(ctx, olivia, d, map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "web"}}}))
		require.NoError(t, mergePatch(ctx, olivia, d, map[string]any{"spec": map[string]any{"action": "Relocate", "preferredCluster": "primary-cluster"}}))
		// Back to Failover: the confirmation left on the DRPC does not stand
		// in for the role.
		policyRefused(t, toFailover(olivia, ""), policy, `user "olivia" may not ask DRPlacementControl web for a Failover`)
		// Another failover target is another failover.
		require.NoError(t, toFailover(dana, "web"))
		policyRefused(t, mergePatch(ctx, olivia, d, map[string]any{"spec": map[string]any{"failoverCluster": "other-cluster"}}), policy,
			`user "olivia" may not ask DRPlacementControl web for a Failover`)

		// quorum-manager asks the DRPC of an unplanned FailoverRequest for
		// the Failover (internal/quorum/failover askDRPC: the action, the
		// target and the request's confirmation in one merge patch).
		require.NoError(t, mergePatch(ctx, olivia, d, map[string]any{"spec": map[string]any{"action": "Relocate"}}))
		require.NoError(t, toFailover(quorum, "web"), "quorum-manager's own write")
	})

	t.Run("forced unprotect", func(t *testing.T) {
		const policy = "siterecovery-confirm-force-unprotect"
		forced := protectionRequestOf("web-forced")
		forced.Annotations = map[string]string{srv1alpha1.ForceUnprotectAnnotation: "true", srv1alpha1.ConfirmAnnotation: "web"}
		waitPolicy(t, policy, func() error { return olivia.Create(ctx, forced.DeepCopy(), dry) })

		// Created already forced, to be deleted while failed over.
		policyRefused(t, olivia.Create(ctx, forced.DeepCopy(), dry), policy,
			`user "olivia" may not force the unprotect of VirtualMachine apps/web in dr-production: that needs the disaster-operator role (create on failoverrequests/disaster); an unprotect that waits for a failback needs only the operator role`)
		require.NoError(t, dana.Create(ctx, forced.DeepCopy(), dry))

		pr := protectionRequestOf("web")
		require.NoError(t, olivia.Create(ctx, pr), "protecting needs only the operator role")
		force := func(c client.Client, confirm string) error {
			annotations := map[string]any{srv1alpha1.ForceUnprotectAnnotation: "true"}
			if confirm != "" {
				annotations[srv1alpha1.ConfirmAnnotation] = confirm
			}
			return mergePatch(ctx, c, pr, map[string]any{"metadata": map[string]any{"annotations": annotations}})
		}
		policyRefused(t, force(olivia, "web"), policy, `user "olivia" may not force the unprotect of VirtualMachine apps/web`)
		policyRefused(t, force(dana, ""), policy,
			`a forced unprotect removes the replication of VirtualMachine apps/web even while its group runs on the DR cluster: the VM stays there and its disks on the primary cluster are left out of date, with no failback; confirm it by setting the annotation siterecovery.trilio.io/confirm: "web" on ProtectionRequest web in the same write`)
		require.NoError(t, force(dana, "web"))
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(pr), pr))
		require.Equal(t, "true", pr.Annotations[srv1alpha1.ForceUnprotectAnnotation])
		require.NoError(t, olivia.Delete(ctx, pr), "deleting a request its disaster operator forced is the operator's")
	})

	t.Run("split-brain discard", func(t *testing.T) {
		const policy = "siterecovery-confirm-discard-diverged"
		discard := failoverRequestOf("web-discard")
		discard.Annotations = map[string]string{srv1alpha1.DiscardDivergedAnnotation: "web"}
		waitPolicy(t, policy, func() error { return olivia.Create(ctx, discard.DeepCopy(), dry) })

		policyRefused(t, olivia.Create(ctx, discard.DeepCopy(), dry), policy,
			`user "olivia" may not confirm discarding the diverged writes of group web in dr-production: that needs the disaster-operator role (create on failoverrequests/disaster)`)
		wrong := discard.DeepCopy()
		wrong.Annotations[srv1alpha1.DiscardDivergedAnnotation] = "true"
		policyRefused(t, dana.Create(ctx, wrong, dry), policy,
			`discarding the writes a fenced-off cluster made while cut off cannot be undone; confirm it by setting the annotation siterecovery.trilio.io/discard-diverged: "web" (the group name) on FailoverRequest web-discard`)
		require.NoError(t, dana.Create(ctx, discard.DeepCopy(), dry))

		// The failback holds with TargetRejoined=False until someone annotates it.
		fr := failoverRequestOf("web-back")
		require.NoError(t, olivia.Create(ctx, fr), "a planned failback needs only the operator role")
		annotate := func(c client.Client, value string) error {
			return mergePatch(ctx, c, fr, map[string]any{"metadata": map[string]any{"annotations": map[string]any{srv1alpha1.DiscardDivergedAnnotation: value}}})
		}
		policyRefused(t, annotate(olivia, "web"), policy, `user "olivia" may not confirm discarding the diverged writes of group web`)
		policyRefused(t, annotate(dana, "yes"), policy, `siterecovery.trilio.io/discard-diverged: "web"`)
		require.NoError(t, annotate(dana, "web"))
		// quorum-manager's finalizer write on the confirmed request is its own.
		require.NoError(t, mergePatch(ctx, quorum, fr, map[string]any{"metadata": map[string]any{"finalizers": []any{srv1alpha1.FailoverRequestFinalizer}}}))
	})
}

func drpcOf(name string) *drv1alpha1.DRPlacementControl {
	return &drv1alpha1.DRPlacementControl{
		ObjectMeta: metav1.ObjectMeta{Namespace: disasterNS, Name: name},
		Spec: drv1alpha1.DRPlacementControlSpec{ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: "web"},
			DRPolicyRef: srv1alpha1.LocalObjectReference{Name: "metro"}, PreferredCluster: "primary-cluster",
			PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
}

func protectionRequestOf(name string) *srv1alpha1.ProtectionRequest {
	return &srv1alpha1.ProtectionRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: disasterNS, Name: name},
		Spec: srv1alpha1.ProtectionRequestSpec{VirtualMachine: srv1alpha1.VirtualMachineReference{Namespace: "apps", Name: "web"},
			ZoneRef: srv1alpha1.LocalObjectReference{Name: "production"}, ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "web"}},
	}
}

func failoverRequestOf(name string) *srv1alpha1.FailoverRequest {
	return &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: disasterNS, Name: name},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "web"},
			TargetCluster: "primary-cluster", FailoverType: srv1alpha1.FailoverPlanned},
	}
}

func bindInDR(t *testing.T, admin client.Client, user, kind, role string) {
	t.Helper()
	require.NoError(t, admin.Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: disasterNS, Name: user + "-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}))
}

// actingAs is a client acting as user, as the API server authenticates it.
func actingAs(t *testing.T, cfg *rest.Config, user string, groups ...string) client.Client {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	return c
}

func mergePatch(ctx context.Context, c client.Client, obj client.Object, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, data))
}

// waitPolicy waits until the API server applies policy: try is refused by it.
func waitPolicy(t *testing.T, policy string, try func() error) {
	t.Helper()
	require.Eventually(t, func() bool {
		err := try()
		return err != nil && strings.Contains(err.Error(), policy)
	}, 30*time.Second, 100*time.Millisecond, "policy %s never refused", policy)
}

// policyRefused asserts err is policy's refusal and that it says want.
func policyRefused(t *testing.T, err error, policy, want string) {
	t.Helper()
	require.Error(t, err, "the admission policy should refuse")
	require.Contains(t, err.Error(), "ValidatingAdmissionPolicy '"+policy+"'")
	require.Contains(t, err.Error(), want)
}
