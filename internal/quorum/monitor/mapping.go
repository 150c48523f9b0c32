package monitor

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// groupOfDRBDResource maps a workload DRBDResource to its quorum group by the
// protection-group label.
func groupOfDRBDResource(_ context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	name := l[srv1alpha1.ProtectionGroupLabel]
	if name == "" {
		return nil
	}
	if ns := l[srv1alpha1.DRNamespaceLabel]; ns != "" && ns != key.Namespace {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: key.Namespace, Name: name}}}
}

// groupsOfZone re-evaluates every group of a zone whose cluster became
// (un)reachable: its side is then read, or no longer trusted.
func (r *Reconciler) groupsOfZone(ctx context.Context, key remote.Key) []reconcile.Request {
	groups := &srv1alpha1.ProtectionGroupList{}
	if err := r.Client.List(ctx, groups, client.InNamespace(key.Namespace)); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, g := range groups.Items {
		if g.Spec.ZoneRef != nil && g.Spec.ZoneRef.Name == key.Zone {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
		}
	}
	return reqs
}
