package drpolicy

import (
	"context"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// policiesOfRemote maps a StorageClass or VolumeGroupReplicationClass of a
// workload cluster to the policies of the DR namespace that name that cluster.
func (r *Reconciler) policiesOfRemote(ctx context.Context, key remote.Key, _ client.Object) []reconcile.Request {
	return r.policiesOfCluster(ctx, key.Namespace, key.Cluster)
}

// policiesOfChangedCluster maps a cluster whose reachability changed to the
// policies that name it.
func (r *Reconciler) policiesOfChangedCluster(ctx context.Context, key remote.Key) []reconcile.Request {
	return r.policiesOfCluster(ctx, key.Namespace, key.Cluster)
}

func (r *Reconciler) policiesOfCluster(ctx context.Context, namespace, cluster string) []reconcile.Request {
	list := &drv1alpha1.DRPolicyList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		log.FromContext(ctx).Error(err, "listing DRPolicies for a remote class change", "cluster", cluster)
		return nil
	}
	var reqs []reconcile.Request
	for _, p := range list.Items {
		if cluster == "" || slices.Contains(p.Spec.DRClusters, cluster) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
	}
	return reqs
}

// policiesOfZone re-runs discovery of every policy of the namespace when a
// zone changes: a cluster may have joined or left it.
func (r *Reconciler) policiesOfZone(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.policiesOfCluster(ctx, obj.GetNamespace(), "")
}
