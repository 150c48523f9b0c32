package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/siterecovery/siterecovery/internal/cli"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/chartrender"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestCLIVersion reads the product's version from a real quorum API server
// holding the Deployment the quorum-control-plane chart renders: its
// app.kubernetes.io/version label (the chart's appVersion) and image, and the
// server's Kubernetes version; in a namespace without quorum-manager it says
// so and exits 1, and --client reads nothing.
func TestCLIVersion(t *testing.T) {
	zone := harness.Start(t, harness.Options{Scheme: scheme.New()}, harness.Quorum)
	q := zone.Clusters[harness.Quorum]
	ctx := t.Context()
	ns := env.Namespace
	require.NoError(t, q.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	objs, err := chartrender.Render("quorum-control-plane", ns)
	require.NoError(t, err)
	appVersion, image := "", ""
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" {
			continue
		}
		// Every Deployment of the release (the console's too), as installed.
		require.NoError(t, q.Client.Create(ctx, obj))
		if obj.GetName() == "quorum-manager-"+ns {
			appVersion = obj.GetLabels()["app.kubernetes.io/version"]
			containers, _, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
			require.NoError(t, err)
			for _, c := range containers {
				if c, ok := c.(map[string]any); ok && c["name"] == "manager" {
					image, _ = c["image"].(string)
				}
			}
		}
	}
	require.NotEmpty(t, appVersion, "the chart renders quorum-manager's Deployment with its version label")
	kubeconfig := filepath.Join(t.TempDir(), "quorum.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, q.Kubeconfig, 0o600))
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli.Run(context.Background(), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut},
			append([]string{"--kubeconfig", kubeconfig}, args...))
		t.Logf("kubectl siterecovery %v -> %d\n%s%s", args, code, out.String(), errOut.String())
		return code, out.String(), errOut.String()
	}

	code, out, errOut := run("version", "-n", ns, "-o", "json")
	require.Equal(t, cli.ExitOK, code, errOut)
	var rep cli.VersionReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.NotNil(t, rep.ServerVersion)
	require.Len(t, rep.ServerVersion.QuorumManagers, 1)
	m := rep.ServerVersion.QuorumManagers[0]
	assert.Equal(t, appVersion, m.Version)
	assert.Equal(t, image, m.Image)
	assert.Equal(t, "quorum-manager-"+ns, m.Deployment)
	// The test's kube-apiserver is built without version stamps; a
	// release's reports its own (v1.x.y).
	assert.NotEmpty(t, rep.ServerVersion.KubernetesVersion)
	assert.NotEmpty(t, rep.ClientVersion.Version)

	code, out, _ = run("version", "-n", ns)
	require.Equal(t, cli.ExitOK, code)
	assert.Contains(t, out, "Server Version: "+appVersion+" (Deployment "+ns+"/quorum-manager-"+ns+", image "+image)

	code, _, errOut = run("version", "-n", "default")
	assert.Equal(t, cli.ExitError, code)
	assert.Contains(t, errOut, "no quorum-manager Deployment")

	code, out, _ = run("version", "--client", "-n", "default")
	assert.Equal(t, cli.ExitOK, code)
	assert.NotContains(t, out, "Server Version")

	// Each of the protectionzone chart's roles, bound in the DR namespace
	// as NOTES.txt says, may read the version: it lists Deployments there.
	roles, err := chartrender.Render("protectionzone", "siterecovery-system")
	require.NoError(t, err)
	for _, obj := range roles {
		if obj.GetKind() == "ClusterRole" {
			require.NoError(t, q.Client.Create(ctx, obj))
		}
	}
	for _, role := range []string{"siterecovery-viewer", "siterecovery-operator", "siterecovery-disaster-operator"} {
		user := "user-of-" + role
		require.NoError(t, q.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}))
		code, out, errOut := run("version", "-n", ns, "--as", user)
		require.Equal(t, cli.ExitOK, code, "%s: %s", role, errOut)
		assert.Contains(t, out, "Server Version: "+appVersion, role)
	}
}
