package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kubevirtPolicies holds ValidatingAdmissionPolicies standing in for KubeVirt's
// VirtualMachine admission webhook, which the test clusters do not run: without
// them a VM that real KubeVirt refuses would be accepted, and the product's
// mistakes found only on a real cluster.
const kubevirtPolicies = "test/crds/policies/kubevirt-virtualmachines.yaml"

// virtualMachineCRD is the CRD whose presence brings kubevirtPolicies.
const virtualMachineCRD = "virtualmachines.kubevirt.io"

// installPolicies creates kubevirtPolicies in a cluster that got the KubeVirt
// VirtualMachine CRD, and waits until the API server enforces them: a policy is
// loaded through an informer, and a test that creates a VM right after Start
// must meet the rules already.
func installPolicies(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if !hasPolicies(crds) {
		return nil
	}
	objs, err := readObjects(filepath.Join(RepoRoot(), filepath.FromSlash(kubevirtPolicies)))
	if err != nil {
		return err
	}
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("admission policies: %w", err)
	}
	for _, o := range objs {
		if err := cl.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return waitEnforced(ctx, cl)
}

// hasPolicies reports whether crds bring kubevirtPolicies.
func hasPolicies(crds []*apiextensionsv1.CustomResourceDefinition) bool {
	for _, crd := range crds {
		if crd.Name == virtualMachineCRD {
			return true
		}
	}
	return false
}

// readObjects decodes every document of a YAML file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("admission policies: %w", err)
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for {
		o := &unstructured.Unstructured{}
		err := dec.Decode(&o.Object)
		switch {
		case errors.Is(err, io.EOF):
			return out, nil
		case err != nil:
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(o.Object) > 0 {
			out = append(out, o)
		}
	}
}

// waitEnforced dry-runs a VM the policies refuse until the API server refuses it.
// The probe meets the CRD's schema (a template with a domain and its devices),
// so that only a policy can refuse it.
func waitEnforced(ctx context.Context, cl client.Client) error {
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"namespace": "default", "name": "admission-policy-probe"},
		"spec": map[string]any{"running": false, "runStrategy": "Halted", "template": map[string]any{
			"spec": map[string]any{"domain": map[string]any{"devices": map[string]any{}}},
		}},
	}}
	for {
		err := cl.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if apierrors.IsInvalid(err) && strings.Contains(err.Error(), "spec.running") {
			return nil
		}
		last := "accepted"
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("admission policies of %s not enforced: %w (last answer to a VM they refuse: %s)", kubevirtPolicies, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
