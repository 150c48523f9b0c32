package monitor

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// readSynced reads the replication state of a group whose zone a
// DRPlacementControl places (Offloaded, VolSync) from that DRPC; nil for a
// DRBD group, which readSides reads from its DRBDResources.
func (r *Reconciler) readSynced(ctx context.Context, group *srv1alpha1.ProtectionGroup) (*Synced, error) {
	if group.Spec.ZoneRef == nil {
		return nil, nil
	}
	zone := &srv1alpha1.ProtectionZone{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: group.Namespace, Name: group.Spec.ZoneRef.Name}, zone); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if b := zone.Spec.StorageBackend; b == "" || b == srv1alpha1.BackendDRBD {
		return nil, nil
	}
	list := &drv1alpha1.DRPlacementControlList{}
	if err := r.Client.List(ctx, list, client.InNamespace(group.Namespace)); err != nil {
		return nil, fmt.Errorf("listing DRPlacementControls: %w", err)
	}
	s := &Synced{Since: group.CreationTimestamp.Time, Backend: zone.Spec.StorageBackend}
	for i := range list.Items {
		d := &list.Items[i]
		if d.Spec.ProtectionGroupRef.Name != group.Name {
			continue
		}
		s.Since = d.CreationTimestamp.Time
		s.Protected = meta.IsStatusConditionTrue(d.Status.Conditions, drv1alpha1.ConditionProtected)
		if t := d.Status.LastGroupSyncTime; t != nil {
			at := t.Time
			s.LastSyncTime = &at
		}
		s.Interval = r.interval(ctx, d)
		s.Tracked = s.LastSyncTime != nil || s.Interval > 0
		return s, nil
	}
	// No DRPC yet: nothing protects the group.
	return s, nil
}

// interval is the DRPC's policy's schedulingInterval (<n>m, <n>h or <n>d); 0
// when the storage replicates on its own, so that a missing sync time is
// then no lag.
func (r *Reconciler) interval(ctx context.Context, d *drv1alpha1.DRPlacementControl) time.Duration {
	p := &drv1alpha1.DRPolicy{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.DRPolicyRef.Name}, p); err != nil {
		return 0
	}
	v, err := drv1alpha1.ParseSchedulingInterval(p.Spec.SchedulingInterval)
	if err != nil {
		return 0 // empty, zero or malformed: no interval to lag behind
	}
	return v
}

// groupOfDRPC maps a DRPlacementControl to the group it places.
func groupOfDRPC(_ context.Context, obj client.Object) []reconcile.Request {
	d, ok := obj.(*drv1alpha1.DRPlacementControl)
	if !ok || d.Spec.ProtectionGroupRef.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.ProtectionGroupRef.Name}}}
}
