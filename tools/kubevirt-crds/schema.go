package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// apiModule is the module whose Go types the schemas come from.
const apiModule = "kubevirt.io/api"

// apiVersion is the version of kubevirt.io/api this command is built with,
// which must be the one the product's go.mod requires: the test CRDs describe
// the API the product's code is compiled against.
func apiVersion(root string) (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", fmt.Errorf("no build information in this binary")
	}
	var built string
	for _, d := range info.Deps {
		if d.Path == apiModule {
			built = d.Version
		}
	}
	if built == "" {
		return "", fmt.Errorf("%s is not among this binary's dependencies", apiModule)
	}
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	product := ""
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == apiModule {
			product = fields[1]
		}
	}
	if err := s.Err(); err != nil {
		return "", err
	}
	if product != built {
		return "", fmt.Errorf("the product's go.mod requires %s %q but tools/kubevirt-crds/go.mod has %s: make them the same",
			apiModule, product, built)
	}
	return built, nil
}

// controllerGenSchemas runs controller-gen over each kubevirt.io/api package
// of kinds as KubeVirt's hack/generate.sh does (crd:allowDangerousTypes=true
// over core/v1, for the float fields of its types; plain crd over
// instancetype/v1beta1) and returns, by singular name, the first version's
// validation of each generated CRD with backticks in descriptions turned into
// single quotes, as KubeVirt's crd-validation-generator stores them for
// virt-operator.
//
// controller-gen is this repository's (go.mod's tool line), built from the
// root module, but it loads the packages from moduleDir, whose go.mod pins
// the Kubernetes API modules to those of KubeVirt's release: the embedded
// Kubernetes types (PVC specs, probes, affinity, volumes) are then described
// as virt-operator describes them, not as the product's newer k8s.io/api would.
func controllerGenSchemas(ctx context.Context, root, moduleDir, tmp string) (map[string]*apiextensionsv1.CustomResourceValidation, error) {
	gen := filepath.Join(tmp, "controller-gen")
	build := exec.CommandContext(ctx, "go", "build", "-o", gen, "sigs.k8s.io/controller-tools/cmd/controller-gen")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building controller-gen: %w\n%s", err, out)
	}
	crdDirs := map[apiPackage]string{}
	for _, k := range kinds {
		if _, done := crdDirs[k.pkg]; done {
			continue
		}
		dir := filepath.Join(tmp, "crd", strings.ReplaceAll(k.pkg.path, "/", "_"))
		cmd := exec.CommandContext(ctx, gen, k.pkg.options, "paths="+apiModule+"/"+k.pkg.path, "output:crd:dir="+dir)
		cmd.Dir = moduleDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("controller-gen over %s/%s: %w\n%s", apiModule, k.pkg.path, err, out)
		}
		crdDirs[k.pkg] = dir
	}
	schemas := map[string]*apiextensionsv1.CustomResourceValidation{}
	for _, k := range kinds {
		b, err := os.ReadFile(filepath.Join(crdDirs[k.pkg], k.file()))
		if err != nil {
			return nil, fmt.Errorf("controller-gen wrote no %s: %w", k.file(), err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(b, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", k.file(), err)
		}
		if len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil {
			return nil, fmt.Errorf("%s: no schema in its first version", k.file())
		}
		v := crd.Spec.Versions[0].Schema.DeepCopy()
		v.OpenAPIV3Schema = withoutBackticks(v.OpenAPIV3Schema)
		schemas[k.singular] = v
	}
	return schemas, nil
}

// withoutBackticks returns the schema with every backtick in a description
// replaced by a single quote, through properties and items, which is what
// KubeVirt does before it embeds the schema in virt-operator's Go source (a
// raw string literal cannot hold a backtick).
func withoutBackticks(in *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	s := in.DeepCopy()
	s.Description = strings.ReplaceAll(s.Description, "`", "'")
	if s.Items != nil {
		if s.Items.Schema != nil {
			s.Items.Schema = withoutBackticks(s.Items.Schema)
		}
		for i := range s.Items.JSONSchemas {
			s.Items.JSONSchemas[i] = *withoutBackticks(&s.Items.JSONSchemas[i])
		}
	}
	for name, p := range s.Properties {
		s.Properties[name] = *withoutBackticks(&p)
	}
	return s
}

// yamlOf is the YAML of v, for comparisons and messages.
func yamlOf(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(bytes.TrimSpace(b))
}
