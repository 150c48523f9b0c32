package protectiongroup

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/fence"
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

// nameIndex indexes ProtectionGroups by name, so that a replica event reaches
// the groups of its label's name without listing every group of the cluster.
const nameIndex = "metadata.name"

func indexNames(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &srv1alpha1.ProtectionGroup{}, nameIndex, func(obj client.Object) []string {
		return []string{obj.GetName()}
	})
}

// groupsOf maps a VirtualMachine or its VirtualMachineInstance (same name) to the
// groups that list it.
func (r *Reconciler) groupsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	groups := &srv1alpha1.ProtectionGroupList{}
	if err := r.Client.List(ctx, groups, readOnly, client.MatchingFields{vmIndex: obj.GetNamespace() + "/" + obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing ProtectionGroups of a VirtualMachine", "vm", client.ObjectKeyFromObject(obj))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(groups.Items))
	for _, g := range groups.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
	}
	return reqs
}

// replicaNodeIndex indexes DRBDResources by spec.nodeName, so that a taint
// change of a node reaches the groups with a replica there.
const replicaNodeIndex = "spec.nodeName"

func indexReplicaNodes(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &srv1alpha1.DRBDResource{}, replicaNodeIndex, func(obj client.Object) []string {
		return []string{obj.(*srv1alpha1.DRBDResource).Spec.NodeName}
	})
}

// groupsOfReplica maps a DRBDResource to the groups its labels name: the one
// of its DR namespace label, or else every group of that name.
func (r *Reconciler) groupsOfReplica(ctx context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[srv1alpha1.ProtectionGroupLabel]
	if name == "" {
		return nil
	}
	if ns := obj.GetLabels()[srv1alpha1.DRNamespaceLabel]; ns != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}}
	}
	groups := &srv1alpha1.ProtectionGroupList{}
	if err := r.Client.List(ctx, groups, readOnly, client.MatchingFields{nameIndex: name}); err != nil {
		log.FromContext(ctx).Error(err, "listing ProtectionGroups of a DRBDResource", "drbdresource", client.ObjectKeyFromObject(obj))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(groups.Items))
	for _, g := range groups.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
	}
	return reqs
}

// groupsOnNode maps a Node to the groups with a replica on it.
func (r *Reconciler) groupsOnNode(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &srv1alpha1.DRBDResourceList{}
	if err := r.Client.List(ctx, list, readOnly, client.MatchingFields{replicaNodeIndex: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing DRBDResources of a node", "node", obj.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		for _, req := range r.groupsOfReplica(ctx, &list.Items[i]) {
			if !slices.Contains(reqs, req) {
				reqs = append(reqs, req)
			}
		}
	}
	return reqs
}

// taintsChanged passes Node updates that change the lost-quorum taint only:
// a node's status heartbeats would otherwise wake its groups for nothing.
var taintsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		return !ok1 || !ok2 || fence.Tainted(o) != fence.Tainted(n)
	},
}
