package protectiongroup

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// vmIndex indexes ProtectionGroups by the "<namespace>/<name>" of each of their
// VMs, so that a VM event reaches its groups without listing them all.
const vmIndex = "spec.virtualMachines"

func indexVMs(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &srv1alpha1.ProtectionGroup{}, vmIndex, func(obj client.Object) []string {
		g := obj.(*srv1alpha1.ProtectionGroup)
		keys := make([]string, 0, len(g.Spec.VirtualMachines))
		for _, vm := range g.Spec.VirtualMachines {
			keys = append(keys, vm.Namespace+"/"+vm.Name)
		}
		return keys
	})
}

// groupsOf maps a VirtualMachine or its VirtualMachineInstance (same name) to the
// groups that list it.
func (r *Reconciler) groupsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	groups := &srv1alpha1.ProtectionGroupList{}
	if err := r.Client.List(ctx, groups, client.MatchingFields{vmIndex: obj.GetNamespace() + "/" + obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing ProtectionGroups of a VirtualMachine", "vm", client.ObjectKeyFromObject(obj))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(groups.Items))
	for _, g := range groups.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
	}
	return reqs
}
