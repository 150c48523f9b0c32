package failover

import (
	"context"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// activeRequestsOfRemote maps a workload-cluster ProtectionGroup or DRBDResource
// to the unfinished FailoverRequests of the DR namespace. There are few of them at
// any time, so a list of the (cached) requests is cheap.
func (r *Reconciler) activeRequestsOfRemote(ctx context.Context, key remote.Key, _ client.Object) []reconcile.Request {
	return r.activeRequests(ctx, key.Namespace, "")
}

// requestsOfLease wakes the requests of a group when its failover Lease changes,
// so that a waiting request takes the lock as soon as it is released.
func (r *Reconciler) requestsOfLease(ctx context.Context, obj client.Object) []reconcile.Request {
	group, ok := strings.CutPrefix(obj.GetName(), srv1alpha1.FailoverLockPrefix)
	if !ok {
		return nil
	}
	return r.activeRequests(ctx, obj.GetNamespace(), group)
}

func (r *Reconciler) activeRequests(ctx context.Context, namespace, group string) []reconcile.Request {
	list := &srv1alpha1.FailoverRequestList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, fr := range list.Items {
		if terminal(fr.Status.Phase) || (group != "" && fr.Spec.ProtectionGroupRef.Name != group) {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&fr)})
	}
	return reqs
}
