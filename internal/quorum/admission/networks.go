package admission

import (
	"context"
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/netmap"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// networks checks that each Multus network the group's VMs use on the active
// cluster exists on every other cluster of the zone, or is mapped there
// (netmap.Check). problems refuse the group; a cluster that cannot be read
// is a warning, so that a cluster down never blocks a group.
func (v *protectionGroups) networks(ctx context.Context, g *srv1alpha1.ProtectionGroup) (problems, warnings []string) {
	if g.Spec.ZoneRef == nil || g.Spec.ActiveCluster == "" || len(g.Spec.VirtualMachines) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, labelsTimeout)
	defer cancel()
	zone := &srv1alpha1.ProtectionZone{}
	if err := v.client.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: g.Spec.ZoneRef.Name}, zone); err != nil {
		return nil, []string{fmt.Sprintf("the VMs' networks were not checked: reading ProtectionZone %s: %v", g.Spec.ZoneRef.Name, err)}
	}
	vms, err := v.sourceVMs(ctx, g)
	if err != nil {
		return nil, []string{fmt.Sprintf("the VMs' networks were not checked: %v; kubectl siterecovery validate group %s checks them later", err, g.Name)}
	}
	for _, c := range zone.Spec.Clusters {
		if c.Name == g.Spec.ActiveCluster {
			continue
		}
		m := srv1alpha1.NetworkMappingFor(g.Spec.NetworkMappings, zone.Spec.NetworkMappings, g.Spec.ActiveCluster, c.Name)
		var needs []netmap.Need
		for _, vm := range vms {
			needs = append(needs, netmap.Needs(vm, m)...)
		}
		if len(needs) == 0 {
			continue
		}
		rc, err := v.remote.Get(remote.Key{Namespace: g.Namespace, Zone: zone.Name, Cluster: c.Name})
		var av netmap.Available
		if err == nil {
			av, err = netmap.Read(ctx, rc.Direct, needs)
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("the VMs' networks were not checked on cluster %s: %v", c.Name, err))
			continue
		}
		p, w := netmap.Check(needs, g.Spec.ActiveCluster, c.Name, av)
		problems, warnings = append(problems, p...), append(warnings, w...)
	}
	return problems, warnings
}

// sourceVMs reads the group's VMs on its active cluster; a VM not there yet
// is skipped (the protection flow reports it).
func (v *protectionGroups) sourceVMs(ctx context.Context, g *srv1alpha1.ProtectionGroup) ([]*kubevirtv1.VirtualMachine, error) {
	rc, err := v.remote.Get(remote.Key{Namespace: g.Namespace, Zone: g.Spec.ZoneRef.Name, Cluster: g.Spec.ActiveCluster})
	if err != nil {
		return nil, fmt.Errorf("active cluster %s cannot be reached now (%w)", g.Spec.ActiveCluster, err)
	}
	var out []*kubevirtv1.VirtualMachine
	for _, ref := range g.Spec.VirtualMachines {
		vm := &kubevirtv1.VirtualMachine{}
		err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, vm)
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("reading VirtualMachine %s/%s on %s failed: %w", ref.Namespace, ref.Name, g.Spec.ActiveCluster, err)
		}
		if err == nil {
			out = append(out, vm)
		}
	}
	return out, nil
}
