package pgsync

import (
	"context"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// Field indexes on quorum ProtectionGroups. The names carry the package so that
// other quorum controllers can index the same fields in the same cache.
const (
	// vmIndex holds the "<namespace>/<name>" of each VM of a group.
	vmIndex = "pgsync.spec.virtualMachines"
	// zoneIndex holds spec.zoneRef.name.
	zoneIndex = "pgsync.spec.zoneRef"
)

func indexGroups(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &srv1alpha1.ProtectionGroup{}, vmIndex, func(obj client.Object) []string {
		g := obj.(*srv1alpha1.ProtectionGroup)
		return refKeys(g.Spec.VirtualMachines)
	}); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &srv1alpha1.ProtectionGroup{}, zoneIndex, func(obj client.Object) []string {
		g := obj.(*srv1alpha1.ProtectionGroup)
		if g.Spec.ZoneRef == nil {
			return nil
		}
		return []string{g.Spec.ZoneRef.Name}
	})
}

// remoteEvents is the source of the remote watches on workload groups and VMs,
// and of reachability changes, which wake every group of the cluster's zone;
// all delayed so that a burst of them costs one pass.
func (r *Reconciler) remoteEvents() source.Source {
	return flow.DelayedSource(r.Remote.Source(ControllerName, remote.Events{Kinds: []remote.Kind{
		{Object: &srv1alpha1.ProtectionGroup{}, Map: r.groupOfCopy},
		{Object: &kubevirtv1.VirtualMachine{}, Map: r.groupsOfVM},
	}, Clusters: remote.ZoneMap(r.groupsOfZone)}), remoteEventDelay)
}

// groupOfCopy maps a workload copy to its quorum group by its pg-sync labels.
func (r *Reconciler) groupOfCopy(_ context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	labels := obj.GetLabels()
	name := labels[srv1alpha1.ProtectionGroupLabel]
	if name == "" || labels[srv1alpha1.ZoneLabel] != key.Zone || obj.GetNamespace() != key.Namespace {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: key.Namespace, Name: name}}}
}

// groupsOfVM maps a VM of any zone cluster (a source or a standby) to the quorum
// groups of that zone that list it, and a standby pg-sync created to the group
// of its labels, which deletes it once it stops after leaving the group.
func (r *Reconciler) groupsOfVM(ctx context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	if l := obj.GetLabels(); l[CreatedByLabel] == ControllerName && l[srv1alpha1.ZoneLabel] == key.Zone && l[srv1alpha1.ProtectionGroupLabel] != "" {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: key.Namespace, Name: l[srv1alpha1.ProtectionGroupLabel]}})
	}
	groups := &srv1alpha1.ProtectionGroupList{}
	if err := r.Client.List(ctx, groups, client.InNamespace(key.Namespace),
		client.MatchingFields{vmIndex: vmKey(obj.GetNamespace(), obj.GetName())}); err != nil {
		log.FromContext(ctx).Error(err, "listing ProtectionGroups of a remote VirtualMachine", "cluster", key.Cluster, "vm", client.ObjectKeyFromObject(obj))
		return reqs
	}
	for _, g := range groups.Items {
		if g.Spec.ZoneRef != nil && g.Spec.ZoneRef.Name == key.Zone {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
		}
	}
	return reqs
}

// groupsOfZone maps a ProtectionZone to every group of it.
func (r *Reconciler) groupsOfZone(ctx context.Context, obj client.Object) []reconcile.Request {
	groups := &srv1alpha1.ProtectionGroupList{}
	if err := r.Client.List(ctx, groups, client.InNamespace(obj.GetNamespace()), client.MatchingFields{zoneIndex: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing ProtectionGroups of a ProtectionZone", "zone", client.ObjectKeyFromObject(obj))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(groups.Items))
	for _, g := range groups.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
	}
	return reqs
}
