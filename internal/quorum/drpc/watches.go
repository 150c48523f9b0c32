package drpc

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// Field indexes on DRPCs.
const (
	// globalVGRIndex holds the value of the global-vgr label.
	globalVGRIndex = "drpc.metadata.labels.global-vgr"
	// policyIndex holds spec.drPolicyRef.name.
	policyIndex = "drpc.spec.drPolicyRef"
	// groupIndex holds spec.protectionGroupRef.name.
	groupIndex = "drpc.spec.protectionGroupRef"
	// unrecordedIndex holds the global-vgr label of a DRPC that has not
	// recorded consensus and is not being deleted: the peers whose records the
	// start of a global group's action waits for (groupRecordedConsensus).
	unrecordedIndex = "drpc.globalAction.unrecorded"
)

// drpcIndexes are the field indexes on DRPCs: their names and the value each
// takes from a DRPC ("" for none).
var drpcIndexes = map[string]func(*drv1alpha1.DRPlacementControl) string{
	globalVGRIndex: func(d *drv1alpha1.DRPlacementControl) string { return d.Labels[drv1alpha1.GlobalVGRLabel] },
	policyIndex:    func(d *drv1alpha1.DRPlacementControl) string { return d.Spec.DRPolicyRef.Name },
	groupIndex:     func(d *drv1alpha1.DRPlacementControl) string { return d.Spec.ProtectionGroupRef.Name },
	unrecordedIndex: func(d *drv1alpha1.DRPlacementControl) string {
		if d.DeletionTimestamp.IsZero() && !recordedConsensus(d) {
			return d.Labels[drv1alpha1.GlobalVGRLabel]
		}
		return ""
	},
}

func indexDRPCs(ctx context.Context, indexer client.FieldIndexer) error {
	for name, fn := range drpcIndexes {
		if err := indexer.IndexField(ctx, &drv1alpha1.DRPlacementControl{}, name, indexerFunc(fn)); err != nil {
			return err
		}
	}
	return nil
}

// indexerFunc makes the value an index takes from a DRPC the cache's
// IndexerFunc: no value for "".
func indexerFunc(value func(*drv1alpha1.DRPlacementControl) string) client.IndexerFunc {
	return func(obj client.Object) []string {
		if v := value(obj.(*drv1alpha1.DRPlacementControl)); v != "" {
			return []string{v}
		}
		return nil
	}
}

// peerTrigger selects the DRPC events that can change the consensus of its
// peers: an update of action, failoverCluster or preferredCluster, a
// change of the global-vgr label (a DRPC joining or leaving the group), the
// start of a deletion, and the deletion of a labelled DRPC.
func peerTrigger() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc: func(e event.DeleteEvent) bool {
			return e.Object.GetLabels()[drv1alpha1.GlobalVGRLabel] != ""
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*drv1alpha1.DRPlacementControl)
			n, ok2 := e.ObjectNew.(*drv1alpha1.DRPlacementControl)
			if !ok1 || !ok2 {
				return false
			}
			ol, nl := o.Labels[drv1alpha1.GlobalVGRLabel], n.Labels[drv1alpha1.GlobalVGRLabel]
			if ol == "" && nl == "" {
				return false
			}
			return ol != nl ||
				o.Spec.Action != n.Spec.Action ||
				o.Spec.FailoverCluster != n.Spec.FailoverCluster ||
				o.Spec.PreferredCluster != n.Spec.PreferredCluster ||
				o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
		},
	}
}

// peersOf maps a DRPC to the other DRPCs of its namespace with the same
// global-vgr label.
func (r *Reconciler) peersOf(ctx context.Context, obj client.Object) []reconcile.Request {
	label := obj.GetLabels()[drv1alpha1.GlobalVGRLabel]
	if label == "" {
		return nil
	}
	return r.drpcsBy(ctx, obj.GetNamespace(), globalVGRIndex, label, obj.GetName())
}

// drpcsOfPolicy maps a DRPolicy to the DRPCs that use it: its peer classes and
// interval are copied into their VRGs.
func (r *Reconciler) drpcsOfPolicy(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.drpcsBy(ctx, obj.GetNamespace(), policyIndex, obj.GetName(), "")
}

func (r *Reconciler) drpcsBy(ctx context.Context, namespace, index, value, except string) []reconcile.Request {
	list := &drv1alpha1.DRPlacementControlList{} // read only: the cache's own objects, not copies
	opts := []client.ListOption{client.InNamespace(namespace), client.UnsafeDisableDeepCopy}
	if index != "" {
		opts = append(opts, client.MatchingFields{index: value})
	}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		log.FromContext(ctx).Error(err, "listing DRPlacementControls", "index", index, "value", value)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].Name != except {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// remoteEvents is the source of the remote watches on VRGs and workload
// groups, and of reachability changes, which wake every DRPC of the namespace.
func (r *Reconciler) remoteEvents() source.Source {
	return r.Remote.Source(ControllerName, remote.Events{Kinds: []remote.Kind{
		{Object: &drv1alpha1.VolumeReplicationGroup{}, Map: r.drpcOfVRG},
		{Object: &srv1alpha1.ProtectionGroup{}, Map: r.drpcsOfCopy},
	}, Clusters: func(ctx context.Context, k remote.Key) []reconcile.Request {
		return r.drpcsBy(ctx, k.Namespace, "", "", "")
	}})
}

// drpcOfVRG maps a VRG this controller wrote (managed by siterecovery, labelled
// with the cluster's zone) to the DRPC of the same name in the DR namespace and,
// for a VRG of a global group, to the group's other DRPCs: a Relocate waits for
// all of the group's VRGs to be secondary.
func (r *Reconciler) drpcOfVRG(ctx context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	if l[srv1alpha1.ManagedByLabel] != srv1alpha1.ManagedByValue || l[srv1alpha1.ZoneLabel] != key.Zone {
		return nil
	}
	reqs := []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: key.Namespace, Name: obj.GetName()}}}
	if label := l[drv1alpha1.GlobalVGRLabel]; label != "" {
		reqs = append(reqs, r.drpcsBy(ctx, key.Namespace, globalVGRIndex, label, obj.GetName())...)
	}
	return reqs
}

// drpcsOfCopy maps a workload ProtectionGroup copy to the DRPCs of its group.
func (r *Reconciler) drpcsOfCopy(ctx context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != key.Namespace {
		return nil
	}
	return r.drpcsBy(ctx, key.Namespace, groupIndex, obj.GetName(), "")
}
