// Command kubevirt-crds writes the KubeVirt CRDs that the test clusters
// install, built the way KubeVirt's virt-operator builds them: VirtualMachine
// and VirtualMachineInstance (test/crds/thirdparty, on every workload
// cluster), and the namespaced VirtualMachineInstancetype and
// VirtualMachinePreference (test/crds/instancetype, only on the clusters of
// tests that ask for them).
//
// KubeVirt ships no CRD YAML: virt-operator creates its CRDs at run time. The
// schema it puts in them is produced at KubeVirt's build time by running
// controller-gen over kubevirt.io/api's core/v1 and instancetype/v1beta1 Go
// types, taking the first version's openAPIV3Schema and turning backticks in
// descriptions into single quotes; the names, printer columns and subresources
// are set in Go by virt-operator. This command does the same: it runs this
// repository's controller-gen over kubevirt.io/api at the version the
// product's go.mod requires, loaded with the Kubernetes API types that
// KubeVirt's release was built with (this module's go.mod), and then checks
// the schema against the one embedded in virt-operator's source of the same
// release, failing if they differ in anything.
//
// Where the written CRDs differ from virt-operator's (both on purpose):
//   - only v1 of kubevirt.io's kinds is served; virt-operator also serves
//     v1alpha3, deprecated, with the same schema, which the product never uses;
//   - the objects carry no status and no creationTimestamp, as files do.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
)

func main() {
	root := flag.String("root", "../..", "the repository's root folder")
	skipOperatorCheck := flag.Bool("skip-operator-check", false,
		"do not compare the schemas with virt-operator's embedded ones (which downloads kubevirt.io/kubevirt's source)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *root, !*skipOperatorCheck)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubevirt-crds:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root string, operatorCheck bool) error {
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	version, err := apiVersion(root)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "kubevirt-crds-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()

	schemas, err := controllerGenSchemas(ctx, root, filepath.Join(root, "tools", "kubevirt-crds"), tmp)
	if err != nil {
		return err
	}
	if operatorCheck {
		if err := compareWithOperator(ctx, version, schemas, tmp); err != nil {
			return err
		}
	}
	for _, k := range kinds {
		b, err := render(k, schemas[k.singular], version)
		if err != nil {
			return err
		}
		out := filepath.Join(root, "test", "crds", k.dir)
		if err := os.MkdirAll(out, 0o755); err != nil { //nolint:gosec // a checked-in folder, like the rest of the tree
			return err
		}
		if err := os.WriteFile(filepath.Join(out, k.file()), b, 0o644); err != nil { //nolint:gosec // a checked-in fixture, readable by all like the rest of the tree
			return err
		}
	}
	return nil
}
