package failover

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/fence"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// FieldOwner is the field manager of the failover-controller: it owns
// ProtectionGroup.spec.desiredState (server-side apply) and
// DRBDResource.spec.fencedPeers (merge patch) on the workload clusters.
const FieldOwner = "siterecovery-failover"

// setDesiredState applies spec.desiredState of the group's copy on a cluster,
// unless the API server's copy asks it already: a phase calls it on each of
// its reconciles, and a read costs the server less than an apply. The check
// reads through the API server, never the cache: a cache still showing the
// state of before would skip the write for good when the request ends in the
// same reconcile (a failed failover's restart of its source).
func setDesiredState(ctx context.Context, rc *remote.Remote, namespace, group string, state srv1alpha1.GroupState) error {
	pg := &srv1alpha1.ProtectionGroup{}
	if err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: namespace, Name: group}, pg); err == nil && pg.Spec.DesiredState == state {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(srv1alpha1.GroupVersion.WithKind("ProtectionGroup"))
	u.SetNamespace(namespace)
	u.SetName(group)
	if err := unstructured.SetNestedField(u.Object, string(state), "spec", "desiredState"); err != nil {
		return err
	}
	if err := rc.Direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("setting desiredState=%s on %s: %w", state, rc.Key.Cluster, err)
	}
	return nil
}

// workloadGroup reads the group's copy on a cluster from the remote cache.
// The copy shares its lists and maps with the cache (see readOnly): the
// phases only read it.
func workloadGroup(ctx context.Context, rc *remote.Remote, namespace, group string) (*srv1alpha1.ProtectionGroup, error) {
	pg := &srv1alpha1.ProtectionGroup{}
	if err := rc.Cached.Get(ctx, client.ObjectKey{Namespace: namespace, Name: group}, pg, readOnly); err != nil {
		return nil, fmt.Errorf("reading ProtectionGroup %s on %s: %w", group, rc.Key.Cluster, err)
	}
	return pg, nil
}

// settled reports whether a workload copy has observed its current spec and
// reached state: a stale status of an older desiredState never counts.
func settled(pg *srv1alpha1.ProtectionGroup, state srv1alpha1.GroupState) bool {
	return pg.Spec.DesiredState == state && pg.Status.ObservedGeneration == pg.Generation && pg.Status.CurrentState == state
}

// readOnly skips the deep copy of what a cache read returns. A request's
// phase reads the group's copy and its replicas several times a reconcile,
// and it reconciles on every replica event of a step: copying them each time
// was most of the failover controller's CPU. What it returns shares its
// lists, maps and pointers with the cache and must never be changed; a
// write builds an object of its own (a patch), as every phase does.
var readOnly = client.UnsafeDisableDeepCopy

// drbdResources lists the group's DRBDResources on a cluster, read-only
// (readOnly).
func drbdResources(ctx context.Context, rc *remote.Remote, group string) ([]srv1alpha1.DRBDResource, error) {
	list := &srv1alpha1.DRBDResourceList{}
	if err := rc.Cached.List(ctx, list, client.MatchingLabels{srv1alpha1.ProtectionGroupLabel: group}, readOnly); err != nil {
		return nil, fmt.Errorf("listing DRBDResources of %s on %s: %w", group, rc.Key.Cluster, err)
	}
	return list.Items, nil
}

// taintedNodes lists the replicas' nodes that carry the lost-quorum taint,
// read through the API server.
func taintedNodes(ctx context.Context, rc *remote.Remote, replicas []srv1alpha1.DRBDResource) ([]string, error) {
	out, err := fence.TaintedNodes(ctx, rc.Direct, replicas)
	if err != nil {
		return nil, fmt.Errorf("on %s: %w", rc.Key.Cluster, err)
	}
	return out, nil
}

// untaint removes the lost-quorum taint from a node, leaving every other taint.
// Only a request with force does, beside groups that depend on the taint: the
// node agent owns the taint otherwise.
func untaint(ctx context.Context, rc *remote.Remote, nodeName string) (bool, error) {
	node := &corev1.Node{}
	if err := rc.Direct.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	kept := node.Spec.Taints[:0:0]
	for _, t := range node.Spec.Taints {
		if t.Key != srv1alpha1.LostQuorumTaintKey {
			kept = append(kept, t)
		}
	}
	if len(kept) == len(node.Spec.Taints) {
		return false, nil
	}
	before := node.DeepCopy()
	node.Spec.Taints = kept
	// The optimistic lock makes sure a taint added meanwhile is not dropped blindly.
	return true, rc.Direct.Patch(ctx, node, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// otherRunningGroups lists the groups of the namespace, other than group, that
// run on a cluster: removing a node taint there could disturb them.
func otherRunningGroups(ctx context.Context, rc *remote.Remote, namespace, group string) ([]string, error) {
	list := &srv1alpha1.ProtectionGroupList{}
	if err := rc.Direct.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var names []string
	for _, pg := range list.Items {
		if pg.Name != group && pg.Status.CurrentState == srv1alpha1.StateRunning {
			names = append(names, pg.Name)
		}
	}
	return names, nil
}
