package architecture

import (
	"bytes"
	"go/ast"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// TestControllerReferencesHaveTheFinalizersRight finds every call that sets a
// controller reference (it sets blockOwnerDeletion) and checks that the role
// generated for the binary making it grants update on the owner's
// <plural>/finalizers. Without that right the API server's
// OwnerReferencesPermissionEnforcement admission plugin refuses the create
// (k8s.io/kubernetes plugin/pkg/admission/gc/gc_admission.go).
func TestControllerReferencesHaveTheFinalizersRight(t *testing.T) {
	plurals := crdPlurals(t)
	binaries := map[string]string{
		module + "internal/quorum/":   "quorum-manager",
		module + "internal/workload/": "pg-controller",
		module + "internal/nodeagent": "drbd-node-agent",
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax, Dir: "../.."}
	pkgs, err := packages.Load(cfg, "./internal/quorum/...", "./internal/workload/...", "./internal/nodeagent/...")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, pkg := range pkgs {
		if strings.HasSuffix(pkg.PkgPath, ".test") || strings.HasSuffix(pkg.PkgPath, "_test") {
			continue
		}
		var binary string
		for prefix, b := range binaries {
			if strings.HasPrefix(pkg.PkgPath, prefix) {
				binary = b
			}
		}
		for _, file := range pkg.Syntax {
			name := pkg.Fset.Position(file.Pos()).Filename
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "SetControllerReference" {
					return true
				}
				owner := namedType(pkg.TypesInfo.TypeOf(call.Args[0]))
				if owner == nil {
					t.Errorf("%s: cannot tell the owner's type", pkg.Fset.Position(call.Pos()))
					return true
				}
				plural, ok := plurals[owner.Obj().Name()]
				if !ok {
					t.Errorf("%s: owner %s is not one of this project's CRDs", pkg.Fset.Position(call.Pos()), owner)
					return true
				}
				found++
				if !grants(t, binary, plural[0], plural[1]+"/finalizers", "update") {
					t.Errorf("%s: %s sets a controller reference to a %s, but its role grants no update on %s/finalizers in %s: add "+
						"// +kubebuilder:rbac:groups=%s,resources=%s/finalizers,verbs=update and run make generate",
						pkg.Fset.Position(call.Pos()), binary, owner.Obj().Name(), plural[1], plural[0], plural[0], plural[1])
				}
				return true
			})
		}
	}
	if found == 0 {
		t.Fatal("found no SetControllerReference call: the search is broken")
	}
}

func namedType(tp types.Type) *types.Named {
	if p, ok := tp.(*types.Pointer); ok {
		tp = p.Elem()
	}
	n, _ := tp.(*types.Named)
	return n
}

// crdPlurals maps each CRD's kind to its group and plural.
func crdPlurals(t *testing.T) map[string][2]string {
	t.Helper()
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs under config/crd/bases: %v", err)
	}
	out := map[string][2]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[crd.Spec.Names.Kind] = [2]string{crd.Spec.Group, crd.Spec.Names.Plural}
	}
	return out
}

// grants reports whether any role generated for binary allows verb on
// resource in group.
func grants(t *testing.T, binary, group, resource, verb string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../config/rbac", binary, "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		role := &rbacv1.ClusterRole{} // a Role's rules decode the same way
		if err := dec.Decode(role); err != nil {
			return false
		}
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
	}
}
