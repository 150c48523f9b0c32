package pgsync

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

var copyLabels = map[string]string{CreatedByLabel: ControllerName, srv1alpha1.DRNamespaceLabel: "dr-production"}

func sourceService() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "db", "namespace": "apps", "uid": "u1", "resourceVersion": "7",
			"labels":      map[string]any{"app": "db"},
			"annotations": map[string]any{lastAppliedAnnotation: `{"secret":"x"}`, "example.com/team": "data"}},
		"spec": map[string]any{"type": "LoadBalancer", "clusterIP": "10.0.0.5", "clusterIPs": []any{"10.0.0.5"},
			"healthCheckNodePort": int64(31000), "selector": map[string]any{"app": "db"},
			"ports": []any{map[string]any{"port": int64(5432), "nodePort": int64(30001)}}},
		"status": map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "192.0.2.1"}}}},
	}}
}

// TestCompanionCopyOfAService: the DR copy keeps the Service's content, labels
// and annotations, drops what the source cluster set or allocated and
// kubectl's last-applied copy, takes the cluster's override on top, and
// carries pg-sync's labels whatever the override says.
func TestCompanionCopyOfAService(t *testing.T) {
	src := sourceService()
	patch := []byte(`{"spec":{"loadBalancerIP":"10.2.0.9"},"metadata":{"name":"other","labels":{"app":"web","` + CreatedByLabel + `":null}}}`)
	cp, err := buildCompanionCopy(src, srv1alpha1.CompanionService, copyLabels, patch)
	require.NoError(t, err)
	require.Equal(t, "db", cp.GetName(), "an override cannot rename the copy")
	require.Equal(t, "apps", cp.GetNamespace())
	require.Empty(t, cp.GetUID())
	require.Empty(t, cp.GetResourceVersion())
	require.NotContains(t, cp.Object, "status")
	spec := cp.Object["spec"].(map[string]any)
	for _, k := range []string{"clusterIP", "clusterIPs", "healthCheckNodePort"} {
		require.NotContains(t, spec, k)
	}
	require.NotContains(t, spec["ports"].([]any)[0], "nodePort")
	require.Equal(t, "10.2.0.9", spec["loadBalancerIP"])
	require.Equal(t, "LoadBalancer", spec["type"])
	require.Equal(t, ControllerName, cp.GetLabels()[CreatedByLabel], "an override cannot take pg-sync's labels off")
	require.Equal(t, "web", cp.GetLabels()["app"])
	require.NotContains(t, cp.GetAnnotations(), lastAppliedAnnotation)
	require.Equal(t, "data", cp.GetAnnotations()["example.com/team"])
	require.NotEmpty(t, cp.GetAnnotations()[companionHashAnnotation])
	require.Equal(t, "10.0.0.5", src.Object["spec"].(map[string]any)["clusterIP"], "the source is not changed")

	again, err := buildCompanionCopy(sourceService(), srv1alpha1.CompanionService, copyLabels, patch)
	require.NoError(t, err)
	require.Equal(t, cp.GetAnnotations()[companionHashAnnotation], again.GetAnnotations()[companionHashAnnotation], "the same source gives the same hash")
	other, err := buildCompanionCopy(sourceService(), srv1alpha1.CompanionService, copyLabels, nil)
	require.NoError(t, err)
	require.NotEqual(t, cp.GetAnnotations()[companionHashAnnotation], other.GetAnnotations()[companionHashAnnotation], "an override changes the hash")
}

// TestCompanionCopyKeepsAHeadlessService: clusterIP None is a choice, not an
// allocation.
func TestCompanionCopyKeepsAHeadlessService(t *testing.T) {
	src := sourceService()
	src.Object["spec"].(map[string]any)["clusterIP"] = "None"
	cp, err := buildCompanionCopy(src, srv1alpha1.CompanionService, copyLabels, nil)
	require.NoError(t, err)
	require.Equal(t, "None", cp.Object["spec"].(map[string]any)["clusterIP"])
}

// TestCompanionMergePatch follows RFC 7386: objects merge, null deletes,
// anything else replaces; a patch that is no object is refused.
func TestCompanionMergePatch(t *testing.T) {
	src := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "apps"},
		"data":     map[string]any{"A": "1", "B": "2", "C": "3"}}}
	cp, err := buildCompanionCopy(src, srv1alpha1.CompanionConfigMap, copyLabels, []byte(`{"data":{"A":"9","B":null,"D":"4"}}`))
	require.NoError(t, err)
	require.Equal(t, map[string]any{"A": "9", "C": "3", "D": "4"}, cp.Object["data"])
	_, err = buildCompanionCopy(src, srv1alpha1.CompanionConfigMap, copyLabels, []byte(`["not","an","object"]`))
	require.Error(t, err)
}
