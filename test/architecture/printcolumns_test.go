package architecture

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// readyColumn is the printer column kubectl get shows for a kind's Ready
// condition, as Cluster API's and Flux's kinds show theirs.
const readyColumn = `.status.conditions[?(@.type=="Ready")].status`

// TestKindsWithReadyShowItInKubectlGet: every kind whose controller sets the
// Ready condition has a Ready column, so `kubectl get` answers "is it done"
// without -o yaml.
func TestKindsWithReadyShowItInKubectlGet(t *testing.T) {
	kinds := []string{"FailoverRequest", "ProtectionRequest", "ProtectionGroup", "TestFailover", "ProtectionZone", "DRBDResource",
		"DRPlacementControl", "ReplicationGroupSource", "ReplicationGroupDestination"}
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs under config/crd/bases: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		kind := crd.Spec.Names.Kind
		if !slices.Contains(kinds, kind) {
			continue
		}
		seen[kind] = true
		for _, v := range crd.Spec.Versions {
			if !slices.ContainsFunc(v.AdditionalPrinterColumns, func(c apiextensionsv1.CustomResourceColumnDefinition) bool {
				return c.Name == "Ready" && c.JSONPath == readyColumn && c.Priority == 0
			}) {
				t.Errorf("%s %s has no Ready printer column (+kubebuilder:printcolumn:name=\"Ready\",type=string,JSONPath=`%s`)", kind, v.Name, readyColumn)
			}
		}
	}
	for _, k := range kinds {
		if !seen[k] {
			t.Errorf("no CRD of kind %s under config/crd/bases", k)
		}
	}
}
