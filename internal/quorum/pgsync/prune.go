package pgsync

import (
	"context"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// deleteStandbys deletes, on a non-active cluster, the standby VMs pg-sync
// created for the group (CreatedByLabel and the group's pg-sync labels) whose VM
// is not in keep. A standby that runs, or whose run fields would start it, is
// reported as drift and left in place: it may be the only copy of the VM that
// runs. Each delete carries the UID and resourceVersion read, so a standby that
// changed since (started, say) is not deleted on a stale view.
func (r *Reconciler) deleteStandbys(ctx context.Context, s *scope, rem *remote.Remote, reader client.Reader, c *clusterResult, keep []srv1alpha1.VirtualMachineReference) error {
	list := &kubevirtv1.VirtualMachineList{}
	if err := reader.List(ctx, list, client.MatchingLabels(standbyLabels(s.group))); err != nil {
		return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("cluster %s: listing standby VirtualMachines: %w", c.name, err))
	}
	kept := map[string]bool{}
	for _, ref := range keep {
		kept[vmKey(ref.Namespace, ref.Name)] = true
	}
	for i := range list.Items {
		vm := &list.Items[i]
		key := vmKey(vm.Namespace, vm.Name)
		switch {
		case kept[key] || !vm.DeletionTimestamp.IsZero():
			continue
		case vmActive(vm) || !halted(vm):
			c.drift = append(c.drift, fmt.Sprintf("standby VirtualMachine %s is not in the group but is %s on non-active cluster %s; left in place",
				key, printable(vm), c.name))
			continue
		}
		vm, err := claimStandby(ctx, rem, vm, s.group.Namespace)
		if err != nil {
			return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("cluster %s: labelling standby VirtualMachine %s with its DR namespace: %w", c.name, key, err))
		}
		uid, rv := vm.UID, vm.ResourceVersion
		err = rem.Direct.Delete(ctx, vm, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			// A conflict included: the next pass decides on what the VM is now.
			return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("cluster %s: deleting standby VirtualMachine %s: %w", c.name, key, err))
		default:
			c.wrote = true
		}
	}
	return nil
}

// standbyLabels select the standby VMs pg-sync created for a group.
func standbyLabels(g *srv1alpha1.ProtectionGroup) map[string]string {
	l := maps.Clone(pgSyncLabels(g))
	l[CreatedByLabel] = ControllerName
	return l
}

// halted reports run fields that keep a VM stopped, as KubeVirt reads them.
func halted(vm *kubevirtv1.VirtualMachine) bool {
	if vm.Spec.Running != nil {
		return !*vm.Spec.Running
	}
	return vm.Spec.RunStrategy == nil || *vm.Spec.RunStrategy == kubevirtv1.RunStrategyHalted
}
