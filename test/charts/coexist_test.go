package charts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/chartrender"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/installed"
)

// upstreamDRPolicy is the kind upstream Ramen (and OpenShift Data Foundation)
// serve: cluster-scoped, under Ramen's own group.
var upstreamDRPolicy = schema.GroupVersionKind{Group: "ramendr.openshift.io", Version: "v1alpha1", Kind: "DRPolicy"}

// TestProtectionZoneBesideUpstreamRamen installs the protectionzone chart with
// Helm on a cluster that already serves upstream Ramen's DRPolicy CRD. Helm skips
// a CRD whose name exists; because our kinds have a group of their own, none of
// ours is skipped, the upstream CRD is left as it was, and each DRPolicy kind
// serves only its own objects.
func TestProtectionZoneBesideUpstreamRamen(t *testing.T) {
	fixture := filepath.Join(harness.RepoRoot(), "test", "charts", "testdata", "upstream-ramen-drpolicy-crd.yaml")
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: []string{fixture}, Scheme: scheme.New()}, harness.Quorum)
	cluster := zone.Clusters[harness.Quorum]
	c := cluster.Client
	ctx := context.Background()

	const releaseNamespace, drNamespace = "siterecovery-system", "dr-production"
	ensureNamespace(t, ctx, c, releaseNamespace)
	ensureNamespace(t, ctx, c, drNamespace)

	helmLog := helmInstall(t, cluster, "protectionzone", releaseNamespace)
	require.NotContains(t, helmLog, "already present", "Helm skipped a CRD of the chart")

	upstreamCRD := established(t, ctx, c, "drpolicies.ramendr.openshift.io")
	require.Equal(t, apiextensionsv1.ClusterScoped, upstreamCRD.Spec.Scope, "the chart changed the upstream CRD")
	require.Equal(t, "ramendr.openshift.io", upstreamCRD.Spec.Group)
	ourCRD := established(t, ctx, c, "drpolicies."+drv1alpha1.GroupVersion.Group)
	require.Equal(t, apiextensionsv1.NamespaceScoped, ourCRD.Spec.Scope)
	established(t, ctx, c, "drplacementcontrols."+drv1alpha1.GroupVersion.Group)

	// One object of each kind, with the same name. The upstream one lists three
	// clusters, which only the upstream schema allows: ours takes exactly two.
	upstream := &unstructured.Unstructured{}
	upstream.SetGroupVersionKind(upstreamDRPolicy)
	upstream.SetName("metro")
	upstream.Object["spec"] = map[string]any{"drClusters": []any{"east", "west", "north"}, "schedulingInterval": "5m"}
	require.NoError(t, c.Create(ctx, upstream))
	ours := &drv1alpha1.DRPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "metro", Namespace: drNamespace},
		Spec:       drv1alpha1.DRPolicySpec{DRClusters: []string{"primary", "dr"}, SchedulingInterval: "0m"},
	}
	require.NoError(t, c.Create(ctx, ours))

	upstreamList := &unstructured.UnstructuredList{}
	upstreamList.SetGroupVersionKind(upstreamDRPolicy.GroupVersion().WithKind("DRPolicyList"))
	require.NoError(t, c.List(ctx, upstreamList))
	require.Len(t, upstreamList.Items, 1, "listing upstream DRPolicies")
	require.Empty(t, upstreamList.Items[0].GetNamespace(), "the upstream DRPolicy is cluster-scoped")
	clusters, _, err := unstructured.NestedStringSlice(upstreamList.Items[0].Object, "spec", "drClusters")
	require.NoError(t, err)
	require.Equal(t, []string{"east", "west", "north"}, clusters)

	ourList := &drv1alpha1.DRPolicyList{}
	require.NoError(t, c.List(ctx, ourList))
	require.Len(t, ourList.Items, 1, "listing our DRPolicies in every namespace")
	require.Equal(t, drNamespace, ourList.Items[0].Namespace)
	require.Equal(t, []string{"primary", "dr"}, ourList.Items[0].Spec.DRClusters)

	// Reading ours where upstream's lives finds nothing, and the reverse.
	err = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "metro"}, &drv1alpha1.DRPolicy{})
	require.True(t, apierrors.IsNotFound(err), "our DRPolicy read in another namespace: %v", err)
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(upstreamDRPolicy)
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "metro"}, got))
	require.Equal(t, upstream.GetUID(), got.GetUID(), "reading the upstream DRPolicy returned another object")
}

// helmInstall runs `helm install sr charts/<dir> --debug` against cluster
// and returns what helm printed, its log included.
func helmInstall(t *testing.T, cluster *harness.Cluster, dir, namespace string) string {
	t.Helper()
	// The harness builds kube-apiserver from source without version stamps, so
	// it reports v0.0.0; the proxy answers with the version it is, which the
	// charts' kubeVersion constraint needs.
	proxy, err := installed.NewVersionProxy(cluster.Name, cluster.Config, t.Logf)
	require.NoError(t, err)
	t.Cleanup(proxy.Close)
	tmp := t.TempDir()
	kubeconfig := filepath.Join(tmp, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, proxy.Kubeconfig, 0o600))
	helm, err := chartrender.Helm()
	require.NoError(t, err)
	cmd := exec.Command(helm, "install", "sr", chartPath(dir), "--namespace", namespace, "--kubeconfig", kubeconfig, "--debug")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(tmp, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(tmp, "config"), "HELM_DATA_HOME="+filepath.Join(tmp, "data"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "helm install %s:\n%s", dir, out)
	return string(out)
}

// established returns the named CRD, failing the test unless the API server
// reports it Established.
func established(t *testing.T, ctx context.Context, c client.Client, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, crd))
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			require.Equal(t, apiextensionsv1.ConditionTrue, cond.Status, "CRD %s: %s", name, cond.Message)
			return crd
		}
	}
	t.Fatalf("CRD %s has no Established condition", name)
	return nil
}
