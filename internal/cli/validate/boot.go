package validate

import (
	"context"
	"fmt"
	"slices"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli/clusters"
)

// bootPlan checks the group's boot plan against the group's VMs as they are
// now, with the messages admission refuses a new plan with: a plan admitted
// before a VM left the group names a VM that is gone, and a selector may
// match nothing once labels changed.
func (z *zoneCheck) bootPlan(ctx context.Context, g *srv1alpha1.ProtectionGroup) {
	if g.Spec.Boot == nil || len(g.Spec.Boot.Stages) == 0 {
		return
	}
	t := g.Name
	var vmLabels map[string]map[string]string
	unmatched := false
	if slices.ContainsFunc(g.Spec.Boot.Stages, func(s srv1alpha1.BootStage) bool { return s.Selector != nil }) {
		var err error
		if vmLabels, err = z.vmLabels(ctx, g); err != nil {
			unmatched = true
			z.r.add("boot-plan", t, Warning, "the stages' selectors were not matched against the group's VMs: "+err.Error(),
				"run validate as a user who may read the kubeconfig Secrets, with the active cluster reachable")
		}
	}
	problems, warnings := srv1alpha1.CheckBootPlan(g.Spec.Boot, g.Spec.VirtualMachines, vmLabels)
	fix := fmt.Sprintf("edit spec.boot: kubectl edit protectiongroup %s -n %s", g.Name, g.Namespace)
	for _, p := range problems {
		z.r.add("boot-plan", t, Problem, p, fix)
	}
	for _, w := range warnings {
		z.r.add("boot-plan", t, Warning, w, fix)
	}
	if len(problems) == 0 && len(warnings) == 0 && !unmatched {
		z.r.ok("boot-plan", t, fmt.Sprintf("%d stages; each names VMs of the group and takes at least one", len(g.Spec.Boot.Stages)))
	}
}

// activeCluster is the connection to the group's active cluster, or why
// there is none to use.
func (z *zoneCheck) activeCluster(g *srv1alpha1.ProtectionGroup) (*clusters.Cluster, error) {
	for _, cl := range z.conns {
		if cl.Name != g.Spec.ActiveCluster {
			continue
		}
		if !cl.Usable() {
			return nil, fmt.Errorf("no client of active cluster %s: %w", cl.Name, cl.Err)
		}
		return cl, nil
	}
	return nil, fmt.Errorf("active cluster %q is not a cluster of zone %s", g.Spec.ActiveCluster, z.zone.Name)
}

// vmLabels reads the labels of the group's VMs on its active cluster.
func (z *zoneCheck) vmLabels(ctx context.Context, g *srv1alpha1.ProtectionGroup) (map[string]map[string]string, error) {
	active, err := z.activeCluster(g)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, ns := range g.VMNamespaces() {
		list := &kubevirtv1.VirtualMachineList{}
		if err := active.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing VirtualMachines in %s on %s: %w", ns, active.Name, err)
		}
		for i := range list.Items {
			out[ns+"/"+list.Items[i].Name] = list.Items[i].Labels
		}
	}
	return out, nil
}
