package netmap

import (
	"testing"

	"github.com/stretchr/testify/require"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// failover applies forward to vm()'s template as pg-sync builds the DR
// standby, and returns it as the DR side has it when it becomes active: the
// DR side assigned MACs to the interfaces Generate left without one.
func failover(t *testing.T, forward *srv1alpha1.NetworkMapping) *kubevirtv1.VirtualMachineInstanceTemplateSpec {
	t.Helper()
	dr := vm().Spec.Template
	Apply(dr, "apps", forward, nil)
	for i := range dr.Spec.Domain.Devices.Interfaces {
		if iface := &dr.Spec.Domain.Devices.Interfaces[i]; iface.MacAddress == "" {
			iface.MacAddress = "02:dd:00:00:00:0" + string(rune('1'+i))
		}
	}
	return dr
}

// back applies reverse to a copy of dr, as pg-sync builds the primary's VM.
func back(dr *kubevirtv1.VirtualMachineInstanceTemplateSpec, reverse *srv1alpha1.NetworkMapping) *kubevirtv1.VirtualMachineInstanceTemplateSpec {
	out := dr.DeepCopy()
	Apply(out, "apps", reverse, nil)
	return out
}

// TestRoundTrip: after a failover under a mapping and a failback, the
// primary's VM has the networks and interfaces it had (network sources,
// binding, ports, MACs), whatever the reverse pair leaves unsaid; what the
// reverse pair says itself wins.
func TestRoundTrip(t *testing.T) {
	primary := vm().Spec.Template.Spec
	podToMultus := &srv1alpha1.NetworkMapping{SourceCluster: "a", TargetCluster: "b", PodNetwork: "infra/dr-pods", MACPolicy: srv1alpha1.MACPolicyGenerate,
		Networks: []srv1alpha1.MultusNetworkMap{{Source: "storage", Target: "dr-storage"}}}
	multusAToB := &srv1alpha1.NetworkMapping{SourceCluster: "a", TargetCluster: "b",
		Networks: []srv1alpha1.MultusNetworkMap{{Source: "storage", Target: "dr-storage"}, {Source: "infra/backup", Target: "infra/dr-backup"}}}
	keepBack := &srv1alpha1.NetworkMapping{SourceCluster: "b", TargetCluster: "a", MACPolicy: srv1alpha1.MACPolicyKeep}
	storageBack := &srv1alpha1.NetworkMapping{SourceCluster: "b", TargetCluster: "a", MACPolicy: srv1alpha1.MACPolicyKeep,
		Networks: []srv1alpha1.MultusNetworkMap{{Source: "apps/dr-storage", Target: "storage"}}}

	for name, c := range map[string]struct{ forward, reverse *srv1alpha1.NetworkMapping }{
		"pod network to Multus and back, no reverse pair":           {podToMultus, nil},
		"pod network to Multus and back, reverse pair names none":   {podToMultus, keepBack},
		"pod network to Multus and back, reverse pair maps storage": {podToMultus, storageBack},
		"Multus A to B and back, no reverse pair":                   {multusAToB, nil},
		"Multus A to B and back, reverse pair maps storage":         {multusAToB, storageBack},
	} {
		t.Run(name, func(t *testing.T) {
			dr := failover(t, c.forward)
			require.NotEqual(t, primary, dr.Spec)
			require.Equal(t, primary, back(dr, c.reverse).Spec)
		})
	}

	t.Run("the reverse pair's own word wins", func(t *testing.T) {
		dr := failover(t, podToMultus)
		reverse := &srv1alpha1.NetworkMapping{SourceCluster: "b", TargetCluster: "a", MACPolicy: srv1alpha1.MACPolicyGenerate,
			Networks: []srv1alpha1.MultusNetworkMap{{Source: "infra/dr-pods", Target: "infra/a-pods"}, {Source: "dr-storage", Target: "other"}}}
		got := back(dr, reverse).Spec
		require.Equal(t, &kubevirtv1.MultusNetwork{NetworkName: "infra/a-pods", Default: true}, got.Networks[0].Multus, "mapped: stays a Multus network")
		require.NotNil(t, got.Domain.Devices.Interfaces[0].Bridge)
		require.Nil(t, got.Domain.Devices.Interfaces[0].Ports)
		require.Equal(t, "other", got.Networks[1].Multus.NetworkName)
		require.Equal(t, primary.Networks[2], got.Networks[2], "unmapped either way")
		for _, iface := range got.Domain.Devices.Interfaces {
			require.Empty(t, iface.MacAddress, "Generate back: no MAC of either side")
		}
	})

	t.Run("a network changed by hand on the DR side stays", func(t *testing.T) {
		dr := failover(t, podToMultus)
		dr.Spec.Networks[1].Multus.NetworkName = "hand"
		got := back(dr, nil).Spec
		require.Equal(t, "hand", got.Networks[1].Multus.NetworkName)
		require.Equal(t, primary.Networks[0], got.Networks[0])
		require.Equal(t, primary.Domain.Devices.Interfaces, got.Domain.Devices.Interfaces, "MACs come back all the same")
	})

	t.Run("a MAC-only record of an earlier version", func(t *testing.T) {
		dr := vm().Spec.Template
		dr.Spec.Domain.Devices.Interfaces[1].MacAddress = ""
		dr.ObjectMeta.Annotations = map[string]string{srv1alpha1.OriginalMACsAnnotation: `{"storage":"02:00:00:00:00:02"}`}
		got := back(dr, keepBack)
		require.Equal(t, primary, got.Spec)
		require.Nil(t, got.ObjectMeta.Annotations, "the old record is not carried back")
	})
}
