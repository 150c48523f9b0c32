package protectiongroup

import (
	"context"
	"fmt"
	"slices"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// A failover step asks a cluster for a run state and a DRBD role in one write
// ("stop and demote" of the source, "promote and run" of the target), and this
// controller orders the two halves on its own cluster:
//   - no replica is demoted while a VM of the group still has a
//     VirtualMachineInstance: its disk may still be open, and a Secondary
//     under a running VM fails its writes;
//   - no VM is started before every replica of the group is Primary: a VM
//     started on a Secondary could not write.
//
// Both hold, whoever wrote the spec, and each hold is reported in the Ready
// condition until it ends.

// Demotes reports whether intent would demote a replica that is asked to be
// Primary now.
func Demotes(in *srv1alpha1.GroupDRBDIntent, replicas []srv1alpha1.DRBDResource) bool {
	return in.Role == srv1alpha1.RoleSecondary && slices.ContainsFunc(replicas, func(r srv1alpha1.DRBDResource) bool {
		return r.Spec.Role == srv1alpha1.RolePrimary
	})
}

// vmsWithInstance names the group's VMs whose VMI the cache still shows.
func vmsWithInstance(s *scope) []string {
	return names(s, func(v vmState) bool { return v.hasVMI })
}

// liveInstances names the group's VMs that have a VMI as the API server
// lists them now. The cache can be behind right after the API server came
// back, and a demotion is decided on what exists, not on what was seen.
func (r *Reconciler) liveInstances(ctx context.Context, s *scope) ([]string, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	inGroup := map[string]bool{}
	var namespaces []string
	for _, ref := range s.group.Spec.VirtualMachines {
		inGroup[ref.Namespace+"/"+ref.Name] = true
		if !slices.Contains(namespaces, ref.Namespace) {
			namespaces = append(namespaces, ref.Namespace)
		}
	}
	var out []string
	for _, ns := range namespaces {
		list := &kubevirtv1.VirtualMachineInstanceList{}
		if err := r.APIReader.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing VirtualMachineInstances in %s: %w", ns, err)
		}
		for _, vmi := range list.Items {
			if key := vmi.Namespace + "/" + vmi.Name; inGroup[key] {
				out = append(out, key)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// demotionHold is the Ready condition's note for a demotion held by VMs.
func demotionHold(vms []string) string {
	return fmt.Sprintf("holding DRBD Secondary until every VM has stopped: %s still %s a VirtualMachineInstance",
		flow.Listed(vms), plural(len(vms), "has", "have"))
}

// startHold says why no VM of the group may start yet, or "" when they may:
// a group with a DRBD intent starts only once that intent is Primary and every
// replica reports Primary. A group without one (not on DRBD) never waits.
func startHold(s *scope) string {
	in := s.group.Spec.DRBD
	if in == nil {
		return ""
	}
	if in.Role != srv1alpha1.RolePrimary {
		return "holding VM starts: spec.drbd asks role " + string(in.Role) + " of this cluster's replicas, and a VM starts only where DRBD is Primary"
	}
	var waiting []string
	for i := range s.replicas {
		if s.replicas[i].Status.Role != string(srv1alpha1.RolePrimary) {
			waiting = append(waiting, s.replicas[i].Namespace+"/"+s.replicas[i].Name)
		}
	}
	if len(waiting) == 0 {
		return ""
	}
	return fmt.Sprintf("holding VM starts until every DRBD replica is Primary (%d of %d are): waiting for %s",
		len(s.replicas)-len(waiting), len(s.replicas), flow.Listed(waiting))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
