package charts

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestBootstrapZoneChecksPeerAuthRoles: scripts/bootstrap-zone.sh checks,
// with the kubeconfig it mints, the rights of the hand-written Role the
// workload chart's drbd-peer-auth template gives quorum-manager in
// <DR namespace>-drbd-auth, as it checks the generated ones, and with a
// SubjectAccessReview the node agent's reader Role there: the rules it lists
// are the template's, and with those Roles unbound it refuses to store the
// kubeconfig, naming each missing right and whose it is; bound, it stores it.
// One API server plays the quorum and both workload clusters.
func TestBootstrapZoneChecksPeerAuthRoles(t *testing.T) {
	root := harness.RepoRoot()
	out, err := exec.Command(filepath.Join(root, "hack", "kubectl.sh")).Output()
	require.NoError(t, err, "building kubectl (hack/kubectl.sh)")
	kubectl := strings.TrimSpace(string(out))
	script := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(root, "scripts", "bootstrap-zone.sh"), args...)
		cmd.Env = append(os.Environ(), "KUBECTL="+kubectl)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}

	objs := renderValues(t, "workload-control-plane", "siterecovery-system",
		map[string]any{"quorumAccess": map[string]any{"drNamespaces": []any{"dr-production"}}})
	var want []string
	for scope, role := range map[string]string{"peer-auth": "siterecovery-peer-auth-writer", "agent-peer-auth": "siterecovery-peer-auth-reader"} {
		obj := find(objs, "Role", "dr-production-drbd-auth", role)
		require.NotNil(t, obj, role)
		rules, _, _ := unstructured.NestedSlice(obj.Object, "rules")
		for _, r := range rules {
			rule := r.(map[string]any)
			for _, res := range rule["resources"].([]any) {
				for _, verb := range rule["verbs"].([]any) {
					want = append(want, scope+" "+verb.(string)+" "+res.(string))
				}
			}
		}
	}
	listed, err := script("--list-rules")
	require.NoError(t, err, listed)
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(listed), "\n") {
		if strings.HasPrefix(l, "peer-auth ") || strings.HasPrefix(l, "agent-peer-auth ") {
			got = append(got, l)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	require.Equal(t, want, got, "the script checks the template's peer-auth Roles")

	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, harness.Primary)
	cluster := zone.Clusters[harness.Primary]
	admin, ctx := cluster.Client, t.Context()
	kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, cluster.Kubeconfig, 0o600))
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "siterecovery-system"}}))
	var bindings []*unstructured.Unstructured
	for _, obj := range objs {
		switch {
		case obj.GetKind() == "RoleBinding" && strings.HasPrefix(obj.GetName(), "siterecovery-peer-auth-"):
			bindings = append(bindings, obj)
		case obj.GetKind() == "Role" && obj.GetName() == "siterecovery-peer-auth-reader":
			require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		case obj.GetKind() == "Namespace" || obj.GetLabels()["app.kubernetes.io/name"] == "quorum-access":
			if obj.GetKind() != "ValidatingAdmissionPolicy" && obj.GetKind() != "ValidatingAdmissionPolicyBinding" {
				require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
			}
		}
	}
	require.Len(t, bindings, 2, "the writer's and the reader's")
	args := []string{"--quorum-kubeconfig", kubeconfig, "--dr-namespace", "dr-production", "--zone", "production",
		"--cluster", "primary=Primary:" + kubeconfig, "--cluster", "dr=DR:" + kubeconfig, "--token-duration", "1h"}

	msg, err := script(args...)
	require.Error(t, err, msg)
	require.Contains(t, msg, "bootstrap-zone: primary: quorum-manager cannot get secrets in dr-production-drbd-auth")
	require.Contains(t, msg, "quorum-manager cannot update secrets in dr-production-drbd-auth")
	require.Contains(t, msg, "bootstrap-zone: primary: the node agent siterecovery-system/drbd-node-agent cannot get secrets in dr-production-drbd-auth")
	require.Contains(t, msg, "quorum-manager cannot delete secrets in dr-production-drbd-auth")
	require.Contains(t, msg, "5 of ")
	require.Contains(t, msg, "drbdNodeAgent.enabled=true")
	sec := &corev1.Secret{}
	require.Error(t, admin.Get(ctx, client.ObjectKey{Namespace: "dr-production", Name: "primary-kubeconfig"}, sec), "nothing stored")

	for _, b := range bindings {
		require.NoError(t, admin.Create(ctx, b))
	}
	// The script checks the rights with SubjectAccessReviews, which the API
	// server answers from its RBAC informers: they may lag the new bindings.
	// A run checks about a hundred rights, for many seconds: the script is
	// run again, whole, until it passes or a deadline.
	deadline := time.Now().Add(3 * time.Minute)
	for msg, err = script(args...); err != nil && time.Now().Before(deadline); msg, err = script(args...) {
		t.Logf("bootstrap-zone.sh again, the rights may not be in effect yet: %v", err)
	}
	require.NoError(t, err, msg)
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: "dr-production", Name: "primary-kubeconfig"}, sec))
}
