package env

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/harness"
)

// bootstrapZone installs the workload chart's quorum identity for the DR
// namespace on each workload cluster, then runs scripts/bootstrap-zone.sh with
// the admin kubeconfigs, as an operator would: it mints the tokens and writes
// the kubeconfig Secrets and the ProtectionZone on the quorum cluster.
func (e *Env) bootstrapZone(t testing.TB, backend srv1alpha1.StorageBackend, companionSecrets bool) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	admin := map[string]string{}
	for name, c := range e.Clusters {
		admin[name] = filepath.Join(dir, name+"-admin.kubeconfig")
		require.NoError(t, os.WriteFile(admin[name], c.Kubeconfig, 0o600))
		if name == Quorum {
			continue
		}
		values := WorkloadValues()
		values["quorumAccess"].(map[string]any)["companionSecrets"] = companionSecrets
		for _, obj := range renderChartValues(t, "workload-control-plane", workloadNamespace, values) {
			// The node agent's reader Role of the peer secrets too: the
			// script checks it.
			if obj.GetLabels()["app.kubernetes.io/name"] == "quorum-access" || obj.GetNamespace() == Namespace+"-drbd-auth" {
				require.NoError(t, c.Client.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
			}
		}
	}
	root := harness.RepoRoot()
	kubectl, err := exec.Command(filepath.Join(root, "hack", "kubectl.sh")).Output()
	require.NoError(t, err, "building kubectl (hack/kubectl.sh)")
	// Twice: the script is rerun to rotate the tokens, and must converge.
	var out []byte
	first := map[string]string{}
	for run := range 2 {
		cmd := exec.Command(filepath.Join(root, "scripts", "bootstrap-zone.sh"),
			"--quorum-kubeconfig", admin[Quorum], "--dr-namespace", Namespace, "--zone", ZoneName,
			"--cluster", Primary+"="+string(srv1alpha1.ClusterRolePrimary)+":"+admin[Primary],
			"--cluster", DR+"="+string(srv1alpha1.ClusterRoleDR)+":"+admin[DR],
			"--backend", string(backend), "--storage-mapping", "standard=standard",
			"--client-timeout-seconds", "2", "--token-duration", "1h")
		cmd.Env = append(os.Environ(), "KUBECTL="+strings.TrimSpace(string(kubectl)))
		out, err = cmd.CombinedOutput()
		t.Logf("bootstrap-zone.sh (run %d):\n%s", run+1, out)
		require.NoError(t, err)
		for _, name := range []string{Primary, DR} {
			kc := e.storedKubeconfig(t, name)
			if run == 0 {
				first[name] = kc
			} else {
				require.NotEqual(t, first[name], kc, "a rerun rotates the token of %s", name)
			}
		}
	}

	// Every connection uses a minted token: no Secret holds a client certificate.
	for _, name := range []string{Primary, DR} {
		kc := e.storedKubeconfig(t, name)
		require.Contains(t, kc, "token: ")
		require.NotContains(t, kc, "client-certificate")
		require.NotContains(t, kc, "client-key")
		require.NotContains(t, string(out), kc[strings.Index(kc, "token: ")+len("token: "):][:20], "the script printed a token")
	}
}

// storedKubeconfig is the kubeconfig of a workload cluster's Secret on the quorum cluster.
func (e *Env) storedKubeconfig(t testing.TB, cluster string) string {
	t.Helper()
	sec := &corev1.Secret{}
	require.NoError(t, e.Client(Quorum).Get(context.Background(), client.ObjectKey{Namespace: Namespace, Name: cluster + "-kubeconfig"}, sec))
	return string(sec.Data[srv1alpha1.KubeconfigSecretKey])
}

// WorkloadValues are the workload chart's values for a cluster of the zone:
// the zone's DR namespace, created by the env, whose quorum identity protects
// the VMs of AppNS (the guard lets it claim VMs and PVCs only there, and
// pg-controller's VM webhook sees only that namespace).
func WorkloadValues() map[string]any {
	return map[string]any{"quorumAccess": map[string]any{"drNamespaces": []any{Namespace}, "createNamespaces": false,
		"applicationNamespaces": map[string]any{Namespace: []any{AppNS}}}}
}
