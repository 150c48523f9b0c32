package charts

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/chartrender"
	"github.com/siterecovery/siterecovery/test/harness"
)

// chartsUnderTest are installed in order, each into its namespace, as an
// operator would: CRDs first, then the quorum manager for one DR namespace, then
// the workload components.
var chartsUnderTest = []struct{ dir, namespace string }{
	{"protectionzone", "siterecovery-system"},
	{"quorum-control-plane", "dr-production"},
	{"workload-control-plane", "siterecovery-system"},
}

func TestChartsLintClean(t *testing.T) {
	for _, ch := range chartsUnderTest {
		t.Run(ch.dir, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			res := lint.Run([]string{chartPath(ch.dir)}, nil)
			for _, m := range res.Messages {
				// An icon is the only recommendation we leave out on purpose.
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				}
			}
			require.Empty(t, res.Errors)
		})
	}
}

func TestChartsRenderAndInstall(t *testing.T) {
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, "quorum")
	c := zone.Clusters["quorum"].Client
	ctx := context.Background()
	created := map[string]int{}

	for _, ch := range chartsUnderTest {
		objs := render(t, ch.dir, ch.namespace)
		require.NotEmpty(t, objs, "chart %s renders nothing", ch.dir)
		ensureNamespace(t, ctx, c, ch.namespace)
		for _, obj := range objs {
			require.NoError(t, c.Create(ctx, obj), "%s: creating %s %s", ch.dir, obj.GetKind(), obj.GetName())
			created[obj.GetKind()]++
		}
	}
	// The objects each tier depends on are there.
	for _, kind := range []string{"Deployment", "DaemonSet", "ServiceAccount", "ClusterRole", "Role", "RoleBinding", "ClusterRoleBinding", "Service"} {
		require.Positive(t, created[kind], "no %s rendered", kind)
	}
}

func TestChartsShipGeneratedCRDs(t *testing.T) {
	for dir, want := range map[string][]string{
		"protectionzone":         {"protectionzones.siterecovery.trilio.io", "failoverrequests.siterecovery.trilio.io", "drplacementcontrols.dr.siterecovery.trilio.io"},
		"workload-control-plane": {"protectiongroups.siterecovery.trilio.io", "drbdresources.siterecovery.trilio.io", "volumereplicationgroups.dr.siterecovery.trilio.io"},
	} {
		chrt, err := loader.Load(chartPath(dir))
		require.NoError(t, err)
		var names []string
		for _, crd := range chrt.CRDObjects() {
			obj := &unstructured.Unstructured{}
			require.NoError(t, utilyaml.Unmarshal(crd.File.Data, &obj.Object))
			names = append(names, obj.GetName())
		}
		require.Subset(t, names, want, "chart %s", dir)
	}
}

func render(t *testing.T, dir, namespace string) []*unstructured.Unstructured {
	t.Helper()
	return renderValues(t, dir, namespace, nil)
}

// renderValues renders a chart with values over its defaults, as `helm template
// --set` would.
func renderValues(t *testing.T, dir, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	chrt, err := loader.Load(chartPath(dir))
	require.NoError(t, err)
	install := action.NewInstall(&action.Configuration{})
	install.ClientOnly = true
	install.DryRun = true
	install.ReleaseName = "sr"
	install.Namespace = namespace
	kv := kubeVersion()
	install.KubeVersion = &kv
	rel, err := install.Run(chrt, chartrender.WithReplicationNetworks(dir, values))
	require.NoError(t, err)

	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(rel.Manifest), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		objs = append(objs, obj)
	}
	return objs
}

func chartPath(dir string) string {
	return filepath.Join(harness.RepoRoot(), "charts", dir)
}

// kubeVersion is the version of the harness's kube-apiserver, as Helm's
// capabilities spell it.
func kubeVersion() chartutil.KubeVersion {
	parts := strings.SplitN(strings.TrimPrefix(harness.KubeVersion, "v"), ".", 3)
	return chartutil.KubeVersion{Version: harness.KubeVersion, Major: parts[0], Minor: parts[1]}
}
