package netmap

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// vm has a masquerade interface on the pod network, one on Multus network
// "storage" of its namespace and one on "infra/backup", each with a MAC.
func vm() *kubevirtv1.VirtualMachine {
	iface := func(name, mac string, b kubevirtv1.InterfaceBindingMethod) kubevirtv1.Interface {
		return kubevirtv1.Interface{Name: name, MacAddress: mac, InterfaceBindingMethod: b}
	}
	bridge := kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}
	masq := iface("default", "02:00:00:00:00:01", kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}})
	masq.Ports = []kubevirtv1.Port{{Port: 80}}
	return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db"},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{
			Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: []kubevirtv1.Interface{
				masq, iface("storage", "02:00:00:00:00:02", bridge), iface("backup", "02:00:00:00:00:03", bridge)}}},
			Networks: []kubevirtv1.Network{
				{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
				{Name: "storage", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "storage"}}},
				{Name: "backup", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "infra/backup"}}},
			}}}}}
}

func TestApply(t *testing.T) {
	t.Run("no mapping keeps the spec", func(t *testing.T) {
		tmpl := vm().Spec.Template
		Apply(tmpl, "apps", nil, nil)
		require.Equal(t, vm().Spec.Template, tmpl)
	})

	// "apps/storage" matches the VM's bare "storage"; the pod network
	// becomes the default Multus network dr-pods, on a bridge.
	m := &srv1alpha1.NetworkMapping{SourceCluster: "a", TargetCluster: "b", PodNetwork: "dr-pods",
		Networks: []srv1alpha1.MultusNetworkMap{{Source: "apps/storage", Target: "dr-storage"}}}
	t.Run("networks and pod network mapped, MACs kept", func(t *testing.T) {
		tmpl := vm().Spec.Template
		Apply(tmpl, "apps", m, nil)
		spec := tmpl.Spec
		require.Equal(t, &kubevirtv1.MultusNetwork{NetworkName: "dr-pods", Default: true}, spec.Networks[0].Multus)
		require.Nil(t, spec.Networks[0].Pod)
		require.Equal(t, "dr-storage", spec.Networks[1].Multus.NetworkName)
		require.Equal(t, "infra/backup", spec.Networks[2].Multus.NetworkName, "an unmapped network keeps its name")
		ifaces := spec.Domain.Devices.Interfaces
		require.NotNil(t, ifaces[0].Bridge, "masquerade is for the pod network only")
		require.Nil(t, ifaces[0].Masquerade)
		require.Nil(t, ifaces[0].Ports)
		for i, mac := range []string{"02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"} {
			require.Equal(t, mac, ifaces[i].MacAddress)
		}
		recorded := Originals(tmpl)
		require.Equal(t, []string{"default", "storage"}, slices.Sorted(maps.Keys(recorded)), "what the mapping changed, for the way back")
		require.Equal(t, vm().Spec.Template.Spec.Networks[0], *recorded["default"].Network)
		require.Equal(t, vm().Spec.Template.Spec.Domain.Devices.Interfaces[0], *recorded["default"].Interface)
	})

	gen := m.DeepCopy()
	gen.MACPolicy = srv1alpha1.MACPolicyGenerate
	t.Run("MAC Generate drops the source's and keeps one the target assigned", func(t *testing.T) {
		tmpl := vm().Spec.Template
		Apply(tmpl, "apps", gen, nil)
		for _, iface := range tmpl.Spec.Domain.Devices.Interfaces {
			require.Empty(t, iface.MacAddress, iface.Name)
		}
		// On the target, kubemacpool gave storage a MAC; backup still has
		// the source's (written under Keep before).
		have := tmpl.DeepCopy()
		have.Spec.Domain.Devices.Interfaces[1].MacAddress = "02:aa:00:00:00:02"
		have.Spec.Domain.Devices.Interfaces[2].MacAddress = "02:00:00:00:00:03"
		again := vm().Spec.Template
		Apply(again, "apps", gen, have)
		require.Equal(t, "", again.Spec.Domain.Devices.Interfaces[0].MacAddress)
		require.Equal(t, "02:aa:00:00:00:02", again.Spec.Domain.Devices.Interfaces[1].MacAddress)
		require.Equal(t, "", again.Spec.Domain.Devices.Interfaces[2].MacAddress)
		require.Equal(t, tmpl.ObjectMeta.Annotations, again.ObjectMeta.Annotations, "the same record at every sync")
	})

	// Failover under Generate, then failback under Keep: the DR copy (with
	// the MACs the DR side assigned) is the source, and the primary's VM
	// gets its own MACs back.
	t.Run("Keep back restores the MACs Generate dropped", func(t *testing.T) {
		drCopy := vm().Spec.Template
		drCopy.ObjectMeta.Annotations = map[string]string{"example.com/keep": "yes"}
		Apply(drCopy, "apps", gen, nil)
		recorded := Originals(drCopy)
		for name, mac := range map[string]string{"default": "02:00:00:00:00:01", "storage": "02:00:00:00:00:02", "backup": "02:00:00:00:00:03"} {
			require.Equal(t, mac, recorded[name].Interface.MacAddress, name)
		}
		drCopy.Spec.Domain.Devices.Interfaces[1].MacAddress = "02:aa:00:00:00:02"

		back := drCopy.DeepCopy()
		Apply(back, "apps", &srv1alpha1.NetworkMapping{SourceCluster: "b", TargetCluster: "a", MACPolicy: srv1alpha1.MACPolicyKeep}, nil)
		for i, mac := range []string{"02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"} {
			require.Equal(t, mac, back.Spec.Domain.Devices.Interfaces[i].MacAddress)
		}
		require.Equal(t, map[string]string{"example.com/keep": "yes"}, back.ObjectMeta.Annotations, "the record is not carried back")

		unmapped := drCopy.DeepCopy()
		Apply(unmapped, "apps", nil, nil)
		require.Equal(t, back.Spec.Domain.Devices.Interfaces, unmapped.Spec.Domain.Devices.Interfaces, "no mapping back restores them too")

		// Generate again from the DR copy records the primary's MACs, not
		// the DR side's.
		onward := drCopy.DeepCopy()
		Apply(onward, "apps", gen, nil)
		require.Equal(t, drCopy.ObjectMeta.Annotations[srv1alpha1.OriginalNetworksAnnotation], onward.ObjectMeta.Annotations[srv1alpha1.OriginalNetworksAnnotation])
	})

	t.Run("a record that is not pg-sync's is dropped", func(t *testing.T) {
		tmpl := vm().Spec.Template
		tmpl.ObjectMeta.Annotations = map[string]string{srv1alpha1.OriginalMACsAnnotation: "not json", srv1alpha1.OriginalNetworksAnnotation: "[]"}
		Apply(tmpl, "apps", nil, nil)
		require.Equal(t, vm().Spec.Template, tmpl)
	})
}

func TestNeedsAndCheck(t *testing.T) {
	m := &srv1alpha1.NetworkMapping{PodNetwork: "infra/dr-pods",
		Networks: []srv1alpha1.MultusNetworkMap{{Source: "storage", Target: "dr-storage"}}}
	needs := Needs(vm(), m)
	require.Equal(t, []Need{
		{VM: "apps/db", Network: "default", Source: "pod network", Target: "infra/dr-pods", Mapped: true},
		{VM: "apps/db", Network: "storage", Source: "apps/storage", Target: "apps/dr-storage", Mapped: true},
		{VM: "apps/db", Network: "backup", Source: "infra/backup", Target: "infra/backup"},
	}, needs)
	require.Len(t, Needs(vm(), nil), 2, "without a mapping only the Multus networks are needed")

	t.Run("all present", func(t *testing.T) {
		p, w := Check(needs, "a", "b", Available{NADs: map[string]bool{"infra/dr-pods": true, "apps/dr-storage": true, "infra/backup": true}})
		require.Empty(t, p)
		require.Empty(t, w)
	})
	t.Run("an unmapped network missing is a problem, a mapped one a warning", func(t *testing.T) {
		p, w := Check(needs, "a", "b", Available{NADs: map[string]bool{"infra/dr-pods": true}})
		require.Equal(t, []string{"VM apps/db network backup uses NetworkAttachmentDefinition infra/backup, which no networkMappings entry from a to b maps and cluster b does not have"}, p)
		require.Equal(t, []string{"VM apps/db network storage (apps/storage) is mapped from a to apps/dr-storage, which cluster b does not have"}, w)
	})
	t.Run("no NetworkAttachmentDefinition API on the target", func(t *testing.T) {
		p, _ := Check(needs, "a", "b", Available{NoCRD: true})
		require.Len(t, p, 1)
		require.Contains(t, p[0], "; cluster b serves no NetworkAttachmentDefinition API (k8s.cni.cncf.io): only the pod network exists there")
	})
}

func TestRead(t *testing.T) {
	needs := []Need{{Target: "apps/storage"}, {Target: "infra/backup"}}
	nad := func(ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("k8s.cni.cncf.io/v1")
		u.SetKind("NetworkAttachmentDefinition")
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(nad("apps", "storage"), nad("apps", "other"), nad("infra", "x")).Build()
	av, err := Read(context.Background(), c, needs)
	require.NoError(t, err)
	require.Equal(t, Available{NADs: map[string]bool{"apps/storage": true, "apps/other": true, "infra/x": true}}, av)

	absent := interceptor.NewClient(c, interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return &meta.NoKindMatchError{GroupKind: NADListKind.GroupKind()}
	}})
	av, err = Read(context.Background(), absent, needs)
	require.NoError(t, err)
	require.True(t, av.NoCRD)
}
