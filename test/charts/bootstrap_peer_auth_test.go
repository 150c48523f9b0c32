package charts

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
// <DR namespace>-drbd-auth, as it checks the generated ones: the rules it
// lists are the template's, and with that Role unbound it refuses to store
// the kubeconfig, naming the missing right; bound, it stores it. One API
// server plays the quorum and both workload clusters.
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
	writer := find(objs, "Role", "dr-production-drbd-auth", "siterecovery-peer-auth-writer")
	require.NotNil(t, writer)
	var want []string
	rules, _, _ := unstructured.NestedSlice(writer.Object, "rules")
	for _, r := range rules {
		rule := r.(map[string]any)
		for _, res := range rule["resources"].([]any) {
			for _, verb := range rule["verbs"].([]any) {
				want = append(want, "peer-auth "+verb.(string)+" "+res.(string))
			}
		}
	}
	listed, err := script("--list-rules")
	require.NoError(t, err, listed)
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(listed), "\n") {
		if strings.HasPrefix(l, "peer-auth ") {
			got = append(got, l)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	require.Equal(t, want, got, "the script checks the template's peer-auth Role")

	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, harness.Primary)
	cluster := zone.Clusters[harness.Primary]
	admin, ctx := cluster.Client, t.Context()
	kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, cluster.Kubeconfig, 0o600))
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "siterecovery-system"}}))
	var binding *unstructured.Unstructured
	for _, obj := range objs {
		switch {
		case obj.GetKind() == "RoleBinding" && obj.GetName() == "siterecovery-peer-auth-writer":
			binding = obj
		case obj.GetKind() == "Namespace" || obj.GetLabels()["app.kubernetes.io/name"] == "quorum-access":
			if obj.GetKind() != "ValidatingAdmissionPolicy" && obj.GetKind() != "ValidatingAdmissionPolicyBinding" {
				require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
			}
		}
	}
	require.NotNil(t, binding)
	args := []string{"--quorum-kubeconfig", kubeconfig, "--dr-namespace", "dr-production", "--zone", "production",
		"--cluster", "primary=Primary:" + kubeconfig, "--cluster", "dr=DR:" + kubeconfig, "--token-duration", "1h"}

	msg, err := script(args...)
	require.Error(t, err, msg)
	require.Contains(t, msg, "bootstrap-zone: primary: quorum-manager cannot get secrets in dr-production-drbd-auth")
	require.Contains(t, msg, "quorum-manager cannot update secrets in dr-production-drbd-auth")
	require.Contains(t, msg, "3 of ")
	sec := &corev1.Secret{}
	require.Error(t, admin.Get(ctx, client.ObjectKey{Namespace: "dr-production", Name: "primary-kubeconfig"}, sec), "nothing stored")

	require.NoError(t, admin.Create(ctx, binding))
	msg, err = script(args...)
	require.NoError(t, err, msg)
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: "dr-production", Name: "primary-kubeconfig"}, sec))
}
