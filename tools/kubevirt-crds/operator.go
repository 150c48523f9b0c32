package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// operatorModule is KubeVirt's main module, whose virt-operator embeds the
// CRD schemas it installs. Its packages cannot be built from the module proxy
// (some of its dependencies are not served there), so its source is only read.
const operatorModule = "kubevirt.io/kubevirt"

// operatorValidations is the file of virt-operator's source that holds, by
// the CRD's singular name, the validation it puts in each CRD version.
const operatorValidations = "pkg/virt-operator/resource/generate/components/validations_generated.go"

// compareWithOperator fails unless each schema equals the one virt-operator
// of the same KubeVirt release embeds (kubevirt.io/api and kubevirt.io/kubevirt
// are released together with the same version).
func compareWithOperator(ctx context.Context, version string, schemas map[string]*apiextensionsv1.CustomResourceValidation, tmp string) error {
	dir, err := download(ctx, operatorModule+"@"+version, tmp)
	if err != nil {
		return err
	}
	embedded, err := readValidations(filepath.Join(dir, filepath.FromSlash(operatorValidations)))
	if err != nil {
		return err
	}
	for _, k := range kinds {
		raw, ok := embedded[k.singular]
		if !ok {
			return fmt.Errorf("%s@%s %s has no validation for %q", operatorModule, version, operatorValidations, k.singular)
		}
		var op apiextensionsv1.CustomResourceValidation
		if err := yaml.UnmarshalStrict([]byte(raw), &op); err != nil {
			return fmt.Errorf("virt-operator's validation for %s: %w", k.singular, err)
		}
		if got, want := yamlOf(schemas[k.singular]), yamlOf(&op); got != want {
			return fmt.Errorf("the %s schema differs from virt-operator's (%s@%s); first difference:\n%s",
				k.singular, operatorModule, version, firstDifference(got, want))
		}
	}
	return nil
}

// download fetches a module version with the go command (checked against
// the checksum database like any dependency) and returns its folder. It runs
// outside any module so that no go.mod or go.sum is touched.
func download(ctx context.Context, modVersion, tmp string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", modVersion)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOFLAGS=")
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); jerr != nil || m.Dir == "" {
		cause := errors.Join(err, jerr)
		if cause == nil {
			cause = errors.New("no folder in its answer")
		}
		return "", fmt.Errorf("go mod download %s: %s (%w)\n%s", modVersion, m.Error, cause, out)
	}
	return m.Dir, nil
}

// readValidations reads the string map literal of virt-operator's generated
// validations file without compiling it.
func readValidations(path string) (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var bad error
	ast.Inspect(f, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok || bad != nil {
			return bad == nil
		}
		k, kok := kv.Key.(*ast.BasicLit)
		v, vok := kv.Value.(*ast.BasicLit)
		if !kok || !vok || k.Kind != token.STRING || v.Kind != token.STRING {
			bad = fmt.Errorf("%s: unexpected entry %T: %T", path, kv.Key, kv.Value)
			return false
		}
		key, err := strconv.Unquote(k.Value)
		if err == nil {
			out[key], err = strconv.Unquote(v.Value)
		}
		if err != nil {
			bad = fmt.Errorf("%s: %w", path, err)
		}
		return false
	})
	if bad == nil && len(out) == 0 {
		bad = fmt.Errorf("%s: no validations found", path)
	}
	return out, bad
}

// firstDifference shows the first line where two texts differ, with a few
// lines before it for context.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	from := max(0, i-5)
	line := func(s []string) string {
		if i < len(s) {
			return s[i]
		}
		return "<end>"
	}
	return fmt.Sprintf("%s\n  generated:      %s\n  virt-operator:  %s",
		strings.Join(g[from:min(i, len(g))], "\n"), line(g), line(w))
}
