package pgsync_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/netmap"
	"github.com/siterecovery/siterecovery/test/env"
)

const sourceMAC = "02:00:00:00:00:0a"

// standbyNetwork checks the standby cache's networks on the DR cluster: its
// "storage" network's Multus name and its interface's MAC, and its "default"
// network: the pod network with a masquerade interface forwarding port 5432
// (podNetwork ""), or the Multus default network podNetwork names with a
// bridge interface.
func standbyNetwork(c client.Client, network, mac string, podNetwork ...string) func() error {
	return func() error {
		vm := &kubevirtv1.VirtualMachine{}
		if err := c.Get(context.Background(), vmKey("cache"), vm); err != nil {
			return err
		}
		spec := vm.Spec.Template.Spec
		nets, ifaces := spec.Networks, spec.Domain.Devices.Interfaces
		if len(nets) != 2 || nets[1].Multus == nil || nets[1].Multus.NetworkName != network {
			return fmt.Errorf("networks %+v, want multus %s", nets, network)
		}
		if len(ifaces) != 2 || ifaces[1].MacAddress != mac {
			return fmt.Errorf("interfaces %+v, want MAC %q", ifaces, mac)
		}
		switch def := nets[0]; {
		case len(podNetwork) == 0 && (def.Pod == nil || ifaces[0].Masquerade == nil || len(ifaces[0].Ports) != 1 || ifaces[0].Ports[0].Port != 5432):
			return fmt.Errorf("default network %+v, interface %+v: want the pod network, masquerade, port 5432", def, ifaces[0])
		case len(podNetwork) == 1 && (def.Multus == nil || !def.Multus.Default || def.Multus.NetworkName != podNetwork[0] || ifaces[0].Bridge == nil || len(ifaces[0].Ports) > 0):
			return fmt.Errorf("default network %+v, interface %+v: want the default Multus network %s, bridge, no ports", def, ifaces[0], podNetwork[0])
		}
		return nil
	}
}

// checkNetworkMapping: the zone's mapping from the primary to the DR cluster
// lands in the standby (the network renamed, the MAC dropped under
// Generate, the pod network replaced by a default Multus network with its
// masquerade interface turned bridge); a MAC the DR side assigned stays and the standby is not
// rewritten by later syncs; a failover and failback restore the primary's
// networks and MAC (checkNetworkRoundTrip); the group's own entry for the
// pair wins over the zone's.
func checkNetworkMapping(t *testing.T, e *env.Env) {
	t.Helper()
	ctx := context.Background()
	q, primary, dr := e.Client(env.Quorum), e.Client(env.Primary), e.Client(env.DR)
	sourceNetworks := func(vm *kubevirtv1.VirtualMachine) {
		vm.Spec.Template.Spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{
			{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}},
				Ports: []kubevirtv1.Port{{Name: "pg", Port: 5432}}},
			{Name: "storage", MacAddress: sourceMAC, InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}}}
		vm.Spec.Template.Spec.Networks = []kubevirtv1.Network{
			{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
			{Name: "storage", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "storage"}}}}
	}
	patch(t, primary, vmKey("cache"), &kubevirtv1.VirtualMachine{}, sourceNetworks)
	env.Eventually(t, wait, "unmapped: the standby has the source's network and MAC", standbyNetwork(dr, "storage", sourceMAC))

	patch(t, q, client.ObjectKey{Namespace: env.Namespace, Name: env.ZoneName}, &srv1alpha1.ProtectionZone{}, func(z *srv1alpha1.ProtectionZone) {
		z.Spec.NetworkMappings = []srv1alpha1.NetworkMapping{
			{SourceCluster: env.Primary, TargetCluster: env.DR, MACPolicy: srv1alpha1.MACPolicyGenerate, PodNetwork: "infra/dr-pods",
				Networks: []srv1alpha1.MultusNetworkMap{{Source: env.AppNS + "/storage", Target: "dr-storage"}}},
			// The reverse pair is failback's; it does not apply here.
			{SourceCluster: env.DR, TargetCluster: env.Primary,
				Networks: []srv1alpha1.MultusNetworkMap{{Source: "dr-storage", Target: "storage"}}},
		}
	})
	env.Eventually(t, wait, "zone mapping: network renamed, MAC dropped, pod network replaced", standbyNetwork(dr, "dr-storage", "", "infra/dr-pods"))

	// The DR side assigns a MAC (as kubemacpool does): pg-sync keeps it and
	// leaves the standby alone across full passes.
	patch(t, dr, vmKey("cache"), &kubevirtv1.VirtualMachine{}, func(vm *kubevirtv1.VirtualMachine) {
		vm.Spec.Template.Spec.Domain.Devices.Interfaces[1].MacAddress = "02:dd:00:00:00:0a"
	})
	before := &kubevirtv1.VirtualMachine{}
	require.NoError(t, dr.Get(ctx, vmKey("cache"), before))
	for _, rpo := range []int32{90, 60} { // each a full pass over the standbys
		setRPO(t, e, rpo)
		env.Eventually(t, wait, "synced", synced(q, metav1.ConditionTrue, srv1alpha1.ReasonInSync, allInSync))
	}
	after := &kubevirtv1.VirtualMachine{}
	require.NoError(t, dr.Get(ctx, vmKey("cache"), after))
	require.Equal(t, before.Generation, after.Generation, "a mapped standby is not rewritten")
	require.NoError(t, standbyNetwork(dr, "dr-storage", "02:dd:00:00:00:0a", "infra/dr-pods")())
	checkNetworkRoundTrip(t, e)

	// The group's entry for the pair replaces the zone's whole: its network,
	// its MAC policy (Keep, the default) and its pod network (none: kept).
	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) {
		g.Spec.NetworkMappings = []srv1alpha1.NetworkMapping{{SourceCluster: env.Primary, TargetCluster: env.DR,
			Networks: []srv1alpha1.MultusNetworkMap{{Source: "storage", Target: "infra/group-storage"}}}}
	})
	env.Eventually(t, wait, "group override wins", standbyNetwork(dr, "infra/group-storage", sourceMAC))
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, q.Get(ctx, groupKey, g))
	require.Equal(t, srv1alpha1.MACPolicyKeep, g.Spec.NetworkMappings[0].MACPolicy, "the API server defaults macPolicy to Keep")
}

// checkNetworkRoundTrip fails the group over to the DR cluster and back, as
// far as pg-sync sees it (the failover-controller flips the active cluster
// and stops the group on the cluster it leaves; pg-sync rewrites no VM that
// runs on a non-active cluster): the standby on the DR side carries the MAC
// it assigned and, in its template, the primary's networks and interfaces
// the zone's pair changed; on failover the reverse pair (Keep, mapping
// dr-storage back, not the pod network) gives the primary's VM exactly its
// own networks and interfaces back: the pod network with masquerade and its
// port, and its MAC, not the DR side's; on failback the DR side keeps its
// MAC.
func checkNetworkRoundTrip(t *testing.T, e *env.Env) {
	t.Helper()
	ctx := context.Background()
	q, primary, dr := e.Client(env.Quorum), e.Client(env.Primary), e.Client(env.DR)
	source := &kubevirtv1.VirtualMachine{}
	require.NoError(t, primary.Get(ctx, vmKey("cache"), source))
	checkRecord := func() {
		standby := &kubevirtv1.VirtualMachine{}
		require.NoError(t, dr.Get(ctx, vmKey("cache"), standby))
		record := netmap.Originals(standby.Spec.Template)
		require.Equal(t, sourceMAC, record["storage"].Interface.MacAddress)
		require.Equal(t, source.Spec.Template.Spec.Networks[0], *record["default"].Network)
		require.Equal(t, source.Spec.Template.Spec.Domain.Devices.Interfaces[0], *record["default"].Interface)
	}
	checkRecord()

	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.ActiveCluster = env.DR })
	patch(t, primary, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.DesiredState = srv1alpha1.StateStopped })
	env.Eventually(t, wait, "failover: the primary's VM has its own networks and MAC back", standbyNetwork(primary, "storage", sourceMAC))
	vm := &kubevirtv1.VirtualMachine{}
	require.NoError(t, primary.Get(ctx, vmKey("cache"), vm))
	require.Equal(t, source.Spec.Template.Spec.Networks, vm.Spec.Template.Spec.Networks)
	require.Equal(t, source.Spec.Template.Spec.Domain.Devices.Interfaces, vm.Spec.Template.Spec.Domain.Devices.Interfaces)

	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.ActiveCluster = env.Primary })
	patch(t, primary, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.DesiredState = srv1alpha1.StateRunning })
	env.Eventually(t, wait, "failback: synced", synced(q, metav1.ConditionTrue, srv1alpha1.ReasonInSync, allInSync))
	require.NoError(t, standbyNetwork(dr, "dr-storage", "02:dd:00:00:00:0a", "infra/dr-pods")())
	checkRecord()
}
