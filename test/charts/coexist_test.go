package charts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
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

	helmLog := helmInstall(t, cluster.Kubeconfig, "protectionzone", releaseNamespace)
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

// helmInstall installs a chart of this repository with Helm's install action
// against the cluster of kubeconfig, as `helm install sr charts/<dir>` would,
// and returns what Helm logged.
func helmInstall(t *testing.T, kubeconfig []byte, dir, namespace string) string {
	t.Helper()
	tmp := t.TempDir()
	path := filepath.Join(tmp, "kubeconfig")
	require.NoError(t, os.WriteFile(path, kubeconfig, 0o600))
	getter := kube.GetConfig(path, "", namespace)
	cacheDir := filepath.Join(tmp, "cache")
	getter.CacheDir = &cacheDir

	var mu sync.Mutex
	var lines []string
	logf := func(format string, v ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, v...))
	}
	cfg := &action.Configuration{}
	require.NoError(t, cfg.Init(getter, namespace, "secret", logf))
	// The harness builds kube-apiserver from source without version stamps, so it
	// reports v0.0.0; the charts' kubeVersion constraint needs the version it is.
	dc, err := getter.ToDiscoveryClient()
	require.NoError(t, err)
	apiVersions, err := action.GetVersionSet(dc)
	require.NoError(t, err)
	cfg.Capabilities = chartutil.DefaultCapabilities.Copy()
	cfg.Capabilities.APIVersions = apiVersions
	cfg.Capabilities.KubeVersion = kubeVersion()

	chrt, err := loader.Load(chartPath(dir))
	require.NoError(t, err)
	install := action.NewInstall(cfg)
	install.ReleaseName = "sr"
	install.Namespace = namespace
	_, err = install.Run(chrt, nil)
	require.NoError(t, err, "helm install %s", dir)

	mu.Lock()
	defer mu.Unlock()
	return strings.Join(lines, "\n")
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
