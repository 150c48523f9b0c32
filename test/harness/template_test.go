package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestTemplateKeyCoversBinariesAndCRDs(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"etcd", "kube-apiserver"} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(name+" v1"), 0o700))
	}
	crd := func(name, field string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{field: {Type: "string"}},
				}},
			}}},
		}
	}
	key := func(crds ...*apiextensionsv1.CustomResourceDefinition) string {
		k, err := templateKey(bin, crds)
		require.NoError(t, err)
		return k
	}
	a, b := crd("as.example.com", "spec"), crd("bs.example.com", "spec")
	base := key(a, b)
	assert.Equal(t, base, key(b, a), "the order CRDs are read in does not matter")
	assert.NotEqual(t, base, key(a), "a CRD fewer is another template")
	assert.NotEqual(t, base, key(a, crd("bs.example.com", "other")), "a changed schema is another template")
	assert.NotEqual(t, key(), base)

	require.NoError(t, os.WriteFile(filepath.Join(bin, "kube-apiserver"), []byte("kube-apiserver v2"), 0o700))
	assert.NotEqual(t, base, key(a, b), "another kube-apiserver build stores another way")

	require.NoError(t, os.Remove(filepath.Join(bin, "etcd")))
	_, err := templateKey(bin, []*apiextensionsv1.CustomResourceDefinition{a})
	assert.Error(t, err, "no etcd, no key")
}

// TestClustersFromOneTemplate checks that clusters started on copies of one
// etcd template serve its CRDs, enforce its admission policies and hold the
// API server's bootstrap objects, and that each copy is its own store.
func TestClustersFromOneTemplate(t *testing.T) {
	RequireAPIServers(t)
	z := Start(t, Options{CRDDirectoryPaths: templateTestCRDs(t)}, "a", "b")
	bin, err := BinaryDir()
	require.NoError(t, err)
	crds, err := readCRDs(templateTestCRDs(t))
	require.NoError(t, err)
	key, err := templateKey(bin, crds)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(os.TempDir(), templateRootName, key))
	require.NoError(t, err, "the zone's clusters started from a template")

	ctx := t.Context()
	for name, c := range z.Clusters {
		var admin rbacv1.ClusterRole
		assert.NoError(t, c.Client.Get(ctx, client.ObjectKey{Name: "admin"}, &admin), "%s: bootstrap roles", name)
		var ns corev1.Namespace
		assert.NoError(t, c.Client.Get(ctx, client.ObjectKey{Name: "kube-system"}, &ns), "%s: system namespaces", name)

		vms := &unstructured.UnstructuredList{}
		vms.SetAPIVersion("kubevirt.io/v1")
		vms.SetKind("VirtualMachineList")
		assert.NoError(t, c.Client.List(ctx, vms), "%s: the template's CRDs are served", name)

		both := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
			"metadata": map[string]any{"namespace": "default", "name": "both"},
			"spec": map[string]any{"running": true, "runStrategy": "Always", "template": map[string]any{
				"spec": map[string]any{"domain": map[string]any{"devices": map[string]any{}}},
			}},
		}}
		err := c.Client.Create(ctx, both)
		assert.True(t, apierrors.IsInvalid(err) && strings.Contains(err.Error(), "spec.running"),
			"%s: the template's KubeVirt admission policies are enforced, got %v", name, err)
	}

	only := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "only-in-a"}}
	require.NoError(t, z.Clusters["a"].Client.Create(ctx, only))
	err = z.Clusters["b"].Client.Get(ctx, client.ObjectKeyFromObject(only), &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "each cluster has its own copy of the template, got %v", err)
}

// templateTestCRDs are the KubeVirt CRDs, which bring admission policies.
func templateTestCRDs(t testing.TB) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(RepoRoot(), "test", "crds", "thirdparty", "kubevirt.io_*"))
	require.NoError(t, err)
	require.NotEmpty(t, matches)
	return matches
}

// BenchmarkClusterStart starts one cluster with the workload clusters' CRDs
// the long way (create every CRD) and from an etcd template, interleaved, and
// reports each one's kube-apiserver and etcd CPU per start:
//
//	go test -run '^$' -bench ClusterStart -benchtime 5x ./test/harness
func BenchmarkClusterStart(b *testing.B) {
	RequireAPIServers(b)
	paths := templateTestCRDs(b)
	paths = append(paths, filepath.Join(RepoRoot(), "charts", "workload-control-plane", "crds"))
	crds, err := readCRDs(paths)
	require.NoError(b, err)
	bin, err := BinaryDir()
	require.NoError(b, err)
	scheme, err := defaultScheme()
	require.NoError(b, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	template := etcdTemplate(ctx, bin, crds, scheme)
	require.NotEmpty(b, template)

	var fresh, fromTemplate time.Duration
	for i := 0; b.Loop(); i++ {
		for _, tmpl := range []string{"", template} {
			dir := b.TempDir()
			before := SampleCPU()
			c, err := startCluster(ctx, "bench", bin, dir, copyCRDs(crds), scheme, Options{}, tmpl)
			require.NoError(b, err)
			used := SampleCPU().Used(before)
			require.NoError(b, c.stop())
			if tmpl == "" {
				fresh += used
			} else {
				fromTemplate += used
			}
		}
	}
	b.ReportMetric(fresh.Seconds()/float64(b.N), "fresh-cpu-s/start")
	b.ReportMetric(fromTemplate.Seconds()/float64(b.N), "template-cpu-s/start")
	b.ReportMetric(float64(fromTemplate)/float64(fresh), "template/fresh")
}
