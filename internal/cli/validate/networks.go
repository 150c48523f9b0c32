package validate

import (
	"context"
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/netmap"
)

// networks checks, for every cluster the group may move to, that each Multus
// network its VMs use on the active cluster exists there or is mapped, with
// the messages admission refuses a new group with (netmap.Check): a group
// admitted before a VM gained a network, or a network deleted on the DR
// side since, shows here.
func (z *zoneCheck) networks(ctx context.Context, g *srv1alpha1.ProtectionGroup) {
	if len(g.Spec.VirtualMachines) == 0 {
		return
	}
	t := g.Name
	fix := fmt.Sprintf("map it in spec.networkMappings of ProtectionZone %s or of the group (kubectl edit protectiongroup %s -n %s), or create the NetworkAttachmentDefinition on the target",
		z.zone.Name, g.Name, g.Namespace)
	vms, err := z.sourceVMs(ctx, g)
	if err != nil {
		z.r.add("networks", t, Warning, "the VMs' networks were not checked: "+err.Error(),
			"run validate as a user who may read the kubeconfig Secrets, with the active cluster reachable")
		return
	}
	checked, findings := 0, 0
	for _, cl := range z.conns {
		if cl.Name == g.Spec.ActiveCluster {
			continue
		}
		m := srv1alpha1.NetworkMappingFor(g.Spec.NetworkMappings, z.zone.Spec.NetworkMappings, g.Spec.ActiveCluster, cl.Name)
		var needs []netmap.Need
		for _, vm := range vms {
			needs = append(needs, netmap.Needs(vm, m)...)
		}
		if len(needs) == 0 {
			continue
		}
		var av netmap.Available
		err := cl.Err
		if cl.Usable() {
			av, err = netmap.Read(ctx, cl.Client, needs)
		}
		if err != nil {
			findings++
			z.r.add("networks", t, Warning, fmt.Sprintf("the VMs' networks were not checked on cluster %s: %v", cl.Name, err),
				"run validate as a user who may read the kubeconfig Secrets, with the cluster reachable")
			continue
		}
		checked += len(needs)
		problems, warnings := netmap.Check(needs, g.Spec.ActiveCluster, cl.Name, av)
		for _, p := range problems {
			z.r.add("networks", t, Problem, p, fix)
		}
		for _, w := range warnings {
			z.r.add("networks", t, Warning, w, fix)
		}
		findings += len(problems) + len(warnings)
	}
	if findings == 0 && checked > 0 {
		z.r.ok("networks", t, fmt.Sprintf("the %d Multus networks the VMs need exist on the clusters they may move to", checked))
	}
}

// sourceVMs reads the group's VMs on its active cluster; one missing there
// is left out (the standby check reports it).
func (z *zoneCheck) sourceVMs(ctx context.Context, g *srv1alpha1.ProtectionGroup) ([]*kubevirtv1.VirtualMachine, error) {
	active, err := z.activeCluster(g)
	if err != nil {
		return nil, err
	}
	var out []*kubevirtv1.VirtualMachine
	for _, ref := range g.Spec.VirtualMachines {
		vm := &kubevirtv1.VirtualMachine{}
		err := active.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, vm)
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("reading VirtualMachine %s/%s on %s: %w", ref.Namespace, ref.Name, active.Name, err)
		}
		if err == nil {
			out = append(out, vm)
		}
	}
	return out, nil
}
