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
// any time, so a list of the (cached) requests is cheap. A replica's change
// wakes only the requests whose phase decides on replicas (readsReplicas):
// a step of N VMs changes 3N replicas, each of which would otherwise cost a
// reconcile of every request waiting on something else.
func (r *Reconciler) activeRequestsOfRemote(ctx context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	if _, replica := obj.(*srv1alpha1.DRBDResource); replica {
		return r.requests(ctx, key.Namespace, func(fr *srv1alpha1.FailoverRequest) bool {
			return readsReplicas(fr.Status.Phase)
		})
	}
	return r.activeRequests(ctx, key.Namespace, "")
}

// readsReplicas reports whether a phase decides on the replicas' state:
// WaitingForDRBD moves the role, and Pending may first resync a target fenced
// off earlier (rejoin.go). StoppingOnSource waits for the source's group to
// report its VMs stopped, StartingOnTarget for the target's to report them
// running: a change of either group's copy wakes them.
func readsReplicas(phase srv1alpha1.FailoverPhase) bool {
	switch phase {
	case srv1alpha1.FailoverStoppingOnSource, srv1alpha1.FailoverStartingOnTarget:
		return false
	}
	return true
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
	return r.requests(ctx, namespace, func(fr *srv1alpha1.FailoverRequest) bool {
		return group == "" || fr.Spec.ProtectionGroupRef.Name == group
	})
}

// requests lists the unfinished requests of a namespace that match.
func (r *Reconciler) requests(ctx context.Context, namespace string, match func(*srv1alpha1.FailoverRequest) bool) []reconcile.Request {
	list := &srv1alpha1.FailoverRequestList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		fr := &list.Items[i]
		if terminal(fr.Status.Phase) || !match(fr) {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(fr)})
	}
	return reqs
}
