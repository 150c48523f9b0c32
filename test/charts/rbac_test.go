package charts

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/siterecovery/siterecovery/test/harness"
)

// TestChartsGrantTheGeneratedRules checks that each chart role grants exactly
// the rules controller-gen generated from the controllers' +kubebuilder:rbac
// markers, under the chart's own names and namespaces.
func TestChartsGrantTheGeneratedRules(t *testing.T) {
	for _, tc := range []struct {
		chart, namespace, kind, name, tier, generatedKind string
	}{
		// quorum-manager's rules are granted in its DR namespace only.
		{"quorum-control-plane", "dr-production", "Role", "quorum-manager-dr-production", "quorum-manager", "ClusterRole"},
		{"workload-control-plane", "siterecovery-system", "ClusterRole", "siterecovery-pg-controller", "pg-controller", "ClusterRole"},
		{"workload-control-plane", "siterecovery-system", "Role", "pg-controller-leader-election", "pg-controller", "Role"},
		{"workload-control-plane", "siterecovery-system", "ClusterRole", "siterecovery-drbd-node-agent", "drbd-node-agent", "ClusterRole"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := generatedRules(t, tc.tier, tc.generatedKind)
			require.NotEmpty(t, want)
			var got []rbacv1.PolicyRule
			for _, obj := range render(t, tc.chart, tc.namespace) {
				if obj.GetKind() != tc.kind || obj.GetName() != tc.name {
					continue
				}
				if tc.kind == "Role" {
					require.Equal(t, tc.namespace, obj.GetNamespace())
				}
				role := &rbacv1.ClusterRole{}
				require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, role))
				got = role.Rules
			}
			require.Equal(t, want, got, "chart %s %s %s", tc.chart, tc.kind, tc.name)
		})
	}
}

// generatedRules reads the rules of the role of kind in config/rbac/<tier>/role.yaml.
func generatedRules(t *testing.T, tier, kind string) []rbacv1.PolicyRule {
	t.Helper()
	return generatedRole(t, tier, kind, "")
}

// generatedRole reads the rules of the role of kind, and of namespace when not
// empty, in config/rbac/<tier>/role.yaml.
func generatedRole(t *testing.T, tier, kind, namespace string) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "config", "rbac", tier, "role.yaml"))
	require.NoError(t, err, "run make generate")
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
		}
		if obj.GetKind() != kind || (namespace != "" && obj.GetNamespace() != namespace) {
			continue
		}
		role := &rbacv1.ClusterRole{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, role))
		return role.Rules
	}
	t.Fatalf("config/rbac/%s/role.yaml holds no %s %s", tier, kind, namespace)
	return nil
}
