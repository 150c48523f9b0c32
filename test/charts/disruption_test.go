package charts

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/siterecovery/siterecovery/test/chartrender"
)

// TestReplicatedControllersSurviveADrain checks that the replicated Deployments
// have a PodDisruptionBudget that selects their pods and lets at most one go,
// and that their replicas prefer different nodes unless the user sets affinity.
func TestReplicatedControllersSurviveADrain(t *testing.T) {
	for _, tc := range []struct {
		chart, deployment string
		one, custom       map[string]any
	}{
		{"quorum-control-plane", "quorum-manager-dr-production",
			map[string]any{"replicas": 1},
			map[string]any{"affinity": map[string]any{"nodeAffinity": map[string]any{}}}},
		{"workload-control-plane", "pg-controller",
			map[string]any{"pgController": map[string]any{"replicas": 1}},
			map[string]any{"pgController": map[string]any{"affinity": map[string]any{"nodeAffinity": map[string]any{}}}}},
	} {
		t.Run(tc.chart, func(t *testing.T) {
			objs, err := chartrender.Render(tc.chart, "dr-production")
			require.NoError(t, err)
			d := findOne(t, objs, "Deployment", tc.deployment)
			podLabels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
			pdb := findOne(t, objs, "PodDisruptionBudget", "")
			sel, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
			require.True(t, labels.SelectorFromSet(sel).Matches(labels.Set(podLabels)), "the PDB selects the pods")
			maxUnavailable, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "maxUnavailable")
			require.Equal(t, "1", fmt.Sprint(maxUnavailable))

			terms, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
			require.Len(t, terms, 1, "replicas prefer different nodes")
			anti, _, _ := unstructured.NestedStringMap(terms[0].(map[string]any), "podAffinityTerm", "labelSelector", "matchLabels")
			require.True(t, labels.SelectorFromSet(anti).Matches(labels.Set(podLabels)), "the anti-affinity selects the Deployment's own pods")

			objs, err = chartrender.RenderValues(tc.chart, "dr-production", tc.one)
			require.NoError(t, err)
			for _, o := range objs {
				require.NotEqual(t, "PodDisruptionBudget", o.GetKind(), "one replica has no budget to keep")
			}
			objs, err = chartrender.RenderValues(tc.chart, "dr-production", tc.custom)
			require.NoError(t, err)
			aff, _, _ := unstructured.NestedMap(findOne(t, objs, "Deployment", tc.deployment).Object, "spec", "template", "spec", "affinity")
			require.Equal(t, map[string]any{"nodeAffinity": map[string]any{}}, aff, "the user's affinity replaces the default")
		})
	}
}

// findOne returns the one object of kind (and name, when given).
func findOne(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	var out *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			require.Nil(t, out, "one %s %s", kind, name)
			out = o
		}
	}
	require.NotNil(t, out, "a %s %s", kind, name)
	return out
}
