package crdvalidation

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// vmNamespace holds the KubeVirt objects of TestKubeVirtCRDsRefuseMalformedVMs.
const vmNamespace = "vms"

// kubevirtVM is a running VM like the ones the product protects: one
// container disk and one PVC disk. Each malformed case below breaks one field.
const kubevirtVM = `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: db}
spec:
  runStrategy: Always
  template:
    metadata: {labels: {app: db}}
    spec:
      domain:
        devices:
          disks:
            - {name: root, disk: {bus: virtio}}
            - {name: data, disk: {bus: virtio}}
        resources: {requests: {memory: 1Gi}}
      volumes:
        - {name: root, containerDisk: {image: quay.io/containerdisks/fedora:latest}}
        - {name: data, persistentVolumeClaim: {claimName: db-data}}
`

// TestKubeVirtCRDsRefuseMalformedVMs proves that the test clusters' KubeVirt
// CRDs carry virt-operator's schema: a VM or VMI that a real KubeVirt API
// refuses is refused here, so a simulator or a controller writing one fails
// its test instead of passing on a schema that keeps anything.
func TestKubeVirtCRDsRefuseMalformedVMs(t *testing.T) {
	dir := filepath.Join(harness.RepoRoot(), "test", "crds", "thirdparty")
	zone := harness.Start(t, harness.Options{Scheme: scheme.New(), CRDDirectoryPaths: []string{
		filepath.Join(dir, "kubevirt.io_virtualmachines.yaml"), filepath.Join(dir, "kubevirt.io_virtualmachineinstances.yaml")}}, "workload")
	c := zone.Clusters["workload"].Client
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, namespace(vmNamespace)))

	t.Run("valid VM", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, decodeVM(t, kubevirtVM)))
	})

	for _, bad := range []struct {
		name  string
		edit  func(t *testing.T, spec map[string]any)
		wants []string
	}{
		{"disk bus is a number", func(t *testing.T, spec map[string]any) {
			disk := nested(t, spec, "template", "spec", "domain", "devices", "disks").([]any)[0].(map[string]any)
			disk["disk"] = map[string]any{"bus": int64(7)}
		}, []string{"spec.template.spec.domain.devices.disks[0].disk.bus", "must be of type string"}},
		{"volumes is an object", func(t *testing.T, spec map[string]any) {
			nested(t, spec, "template", "spec").(map[string]any)["volumes"] = map[string]any{"name": "root"}
		}, []string{"spec.template.spec.volumes", "must be of type array"}},
		{"no template", func(t *testing.T, spec map[string]any) {
			delete(spec, "template")
		}, []string{"spec.template", "Required value"}},
		{"domain without devices", func(t *testing.T, spec map[string]any) {
			delete(nested(t, spec, "template", "spec", "domain").(map[string]any), "devices")
		}, []string{"spec.template.spec.domain.devices", "Required value"}},
		{"run strategy is a boolean", func(t *testing.T, spec map[string]any) {
			spec["runStrategy"] = true
		}, []string{"spec.runStrategy", "must be of type string"}},
		{"a disk without a name", func(t *testing.T, spec map[string]any) {
			disk := nested(t, spec, "template", "spec", "domain", "devices", "disks").([]any)[1].(map[string]any)
			delete(disk, "name")
		}, []string{"spec.template.spec.domain.devices.disks[1].name", "Required value"}},
	} {
		t.Run(bad.name, func(t *testing.T) {
			vm := decodeVM(t, kubevirtVM)
			vm.SetName("bad")
			bad.edit(t, vm.Object["spec"].(map[string]any))
			err := c.Create(ctx, vm)
			require.Error(t, err, "the API server accepted a malformed VirtualMachine")
			require.True(t, apierrors.IsInvalid(err), "want an Invalid error, got %v", err)
			for _, want := range bad.wants {
				require.Contains(t, err.Error(), want)
			}
		})
	}

	t.Run("unknown field", func(t *testing.T) {
		vm := decodeVM(t, kubevirtVM)
		vm.SetName("unknown-field")
		disk := nested(t, vm.Object["spec"].(map[string]any), "template", "spec", "domain", "devices", "disks").([]any)[0].(map[string]any)
		disk["disk"].(map[string]any)["busType"] = "virtio"

		// Strict field validation, as kubectl apply uses: refused.
		err := c.Create(ctx, vm.DeepCopy(), client.FieldValidation("Strict"))
		require.Error(t, err, "the API server accepted an unknown field in strict mode")
		require.Contains(t, err.Error(), `unknown field "spec.template.spec.domain.devices.disks[0].disk.busType"`)

		// The default: accepted, and the field is pruned rather than kept.
		require.NoError(t, c.Create(ctx, vm))
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(vm.GroupVersionKind())
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(vm), got))
		disk = nested(t, got.Object, "spec", "template", "spec", "domain", "devices", "disks").([]any)[0].(map[string]any)
		require.Equal(t, map[string]any{"bus": "virtio"}, disk["disk"], "an unknown field must be pruned")
	})

	t.Run("malformed VMI", func(t *testing.T) {
		vmi := decodeVM(t, `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: bad}
spec:
  domain:
    devices:
      interfaces: {name: default}
`)
		err := c.Create(ctx, vmi)
		require.Error(t, err, "the API server accepted a malformed VirtualMachineInstance")
		require.True(t, apierrors.IsInvalid(err), "want an Invalid error, got %v", err)
		require.Contains(t, err.Error(), "spec.domain.devices.interfaces")
		require.Contains(t, err.Error(), "must be of type array")
	})
}

// decodeVM decodes a KubeVirt object into vmNamespace.
func decodeVM(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := decode(t, manifest)
	obj.SetNamespace(vmNamespace)
	return obj
}

// nested is the value at path in obj, failing the test when it is missing.
func nested(t *testing.T, obj map[string]any, path ...string) any {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	require.NoError(t, err)
	require.True(t, found, "no %v", path)
	return v
}
