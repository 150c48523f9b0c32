package charts

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

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
			// --strict fails on a warning too. An icon, the only
			// recommendation we leave out on purpose, is an INFO.
			out, err := chartrender.RunHelm(nil, "lint", "--strict", chartPath(ch.dir))
			require.NoError(t, err, "helm lint:\n%s", out)
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
		// What `helm install` would create from the chart's crds/ folder.
		out, err := chartrender.RunHelm(nil, "show", "crds", chartPath(dir))
		require.NoError(t, err)
		var names []string
		for _, doc := range strings.Split(out, "\n---") {
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object))
			if obj.GetKind() == "CustomResourceDefinition" {
				names = append(names, obj.GetName())
			}
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
	objs, err := chartrender.RenderValues(dir, namespace, values)
	require.NoError(t, err)
	return objs
}

func chartPath(dir string) string {
	return filepath.Join(harness.RepoRoot(), "charts", dir)
}
