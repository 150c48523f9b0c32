package cli_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/cli"
	"github.com/siterecovery/siterecovery/internal/cli/validate"
	"github.com/siterecovery/siterecovery/test/env"
)

// missingNetwork: a protected VM that gains a Multus network the DR cluster
// lacks, with no mapping, is a problem of `validate` naming the VM, the
// network and the pair; once the network exists on the DR cluster it scores
// ok. The VM is put back as it was.
func (z *zone) missingNetwork(t *testing.T) {
	ctx := context.Background()
	primary := z.Client(env.Primary)
	key := client.ObjectKey{Namespace: env.AppNS, Name: vms[0]}
	setNetworks := func(networks []kubevirtv1.Network, ifaces []kubevirtv1.Interface) {
		vm := &kubevirtv1.VirtualMachine{}
		require.NoError(t, primary.Get(ctx, key, vm))
		before := vm.DeepCopy()
		vm.Spec.Template.Spec.Networks = networks
		vm.Spec.Template.Spec.Domain.Devices.Interfaces = ifaces
		require.NoError(t, primary.Patch(ctx, vm, client.MergeFrom(before)))
	}
	vm := &kubevirtv1.VirtualMachine{}
	require.NoError(t, primary.Get(ctx, key, vm))
	origNetworks, origIfaces := vm.Spec.Template.Spec.Networks, vm.Spec.Template.Spec.Domain.Devices.Interfaces
	setNetworks(append(append([]kubevirtv1.Network{}, origNetworks...), kubevirtv1.Network{Name: "storage",
		NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "storage"}}}),
		append(append([]kubevirtv1.Interface{}, origIfaces...), kubevirtv1.Interface{Name: "storage",
			InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}}))
	defer setNetworks(origNetworks, origIfaces)

	rep, code := z.validate(ctx)
	assert.Equal(t, cli.ExitProblems, code)
	res := find(rep, "networks", validate.Problem)
	require.Len(t, res, 1, "%+v", rep.Results)
	assert.Equal(t, group, res[0].Target)
	assert.Equal(t, "VM apps/vm-00 network storage uses NetworkAttachmentDefinition apps/storage, which no networkMappings entry from primary-cluster to dr-cluster maps and cluster dr-cluster does not have", res[0].Message)
	assert.Contains(t, res[0].Fix, "spec.networkMappings of ProtectionZone "+env.ZoneName)

	nad := &unstructured.Unstructured{}
	nad.SetAPIVersion("k8s.cni.cncf.io/v1")
	nad.SetKind("NetworkAttachmentDefinition")
	nad.SetNamespace(env.AppNS)
	nad.SetName("storage")
	z.create(env.DR, nad)
	defer func() { assert.NoError(t, z.Client(env.DR).Delete(ctx, nad)) }()
	rep, _ = z.validate(ctx)
	assert.Empty(t, find(rep, "networks", validate.Problem))
	assert.NotEmpty(t, find(rep, "networks", validate.OK))
}
