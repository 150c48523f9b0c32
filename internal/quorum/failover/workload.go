package failover

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// FieldOwner is the field manager of the failover-controller: it owns
// ProtectionGroup.spec.desiredState (server-side apply) and the role,
// forcePromotion and quorum of DRBDResource.spec (merge patch) on the workload
// clusters, and nothing else.
const FieldOwner = "siterecovery-failover"

// setDesiredState applies spec.desiredState of the group's copy on a cluster.
func setDesiredState(ctx context.Context, rc *remote.Remote, namespace, group string, state srv1alpha1.GroupState) error {
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
func workloadGroup(ctx context.Context, rc *remote.Remote, namespace, group string) (*srv1alpha1.ProtectionGroup, error) {
	pg := &srv1alpha1.ProtectionGroup{}
	if err := rc.Cached.Get(ctx, client.ObjectKey{Namespace: namespace, Name: group}, pg); err != nil {
		return nil, fmt.Errorf("reading ProtectionGroup %s on %s: %w", group, rc.Key.Cluster, err)
	}
	return pg, nil
}

// settled reports whether a workload copy has observed its current spec and
// reached state: a stale status of an older desiredState never counts.
func settled(pg *srv1alpha1.ProtectionGroup, state srv1alpha1.GroupState) bool {
	return pg.Spec.DesiredState == state && pg.Status.ObservedGeneration == pg.Generation && pg.Status.CurrentState == state
}

// drbdResources lists the group's DRBDResources on a cluster.
func drbdResources(ctx context.Context, rc *remote.Remote, group string) ([]srv1alpha1.DRBDResource, error) {
	list := &srv1alpha1.DRBDResourceList{}
	if err := rc.Cached.List(ctx, list, client.MatchingLabels{srv1alpha1.ProtectionGroupLabel: group}); err != nil {
		return nil, fmt.Errorf("listing DRBDResources of %s on %s: %w", group, rc.Key.Cluster, err)
	}
	return list.Items, nil
}

// setRole sets, in one request, spec.role, spec.forcePromotion and spec.quorum
// of a DRBDResource: one request per replica is what a failover of a large
// group can afford at each step. It is a merge patch under FieldOwner, not a
// server-side apply: the three values are set whatever they were, so an apply
// would only add the API server's cost of merging field sets, paid 20 times at
// each step of a 20-VM failover.
//
// The same values sent to the same replica less than askedFor ago are not sent
// again (askedRoles).
func (r *Reconciler) setRole(ctx context.Context, rc *remote.Remote, res *srv1alpha1.DRBDResource, role srv1alpha1.DRBDRole, force bool, q srv1alpha1.QuorumSettings) error {
	key := rc.Key.Cluster + "/" + res.Namespace + "/" + res.Name
	want := askedRole{role: role, force: force, quorum: q, at: r.Clock.Now()}
	if r.asked.recent(key, want, want.at) {
		return nil
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{
		"role": role, "forcePromotion": force,
		"quorum": map[string]string{"policy": string(q.Policy), "onNoQuorum": string(q.OnNoQuorum)},
	}})
	if err != nil {
		return err
	}
	obj := &srv1alpha1.DRBDResource{ObjectMeta: metav1.ObjectMeta{Namespace: res.Namespace, Name: res.Name}}
	if err := rc.Direct.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("setting role %s (quorum %s) on DRBDResource %s/%s on %s: %w", role, q.Policy, res.Namespace, res.Name, rc.Key.Cluster, err)
	}
	r.asked.record(key, want)
	return nil
}

// keptQuorum is the quorum a replica keeps while only its role changes: its
// own, or that of a secondary if it has none yet.
func keptQuorum(res *srv1alpha1.DRBDResource) srv1alpha1.QuorumSettings {
	if res.Spec.Quorum.Policy == "" {
		return srv1alpha1.QuorumForRole(srv1alpha1.RoleSecondary)
	}
	return res.Spec.Quorum
}

// untaint removes the lost-quorum taint from a node, leaving every other taint.
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

// tainted reports whether a node carries the lost-quorum taint.
func tainted(ctx context.Context, rc *remote.Remote, nodeName string) (bool, error) {
	node := &corev1.Node{}
	if err := rc.Direct.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	for _, t := range node.Spec.Taints {
		if t.Key == srv1alpha1.LostQuorumTaintKey {
			return true, nil
		}
	}
	return false, nil
}

// otherRunningGroups lists the groups of the namespace, other than group, that
// run on a cluster: removing a node taint there could disturb them.
func otherRunningGroups(ctx context.Context, rc *remote.Remote, namespace, group string) ([]string, error) {
	list := &srv1alpha1.ProtectionGroupList{}
	if err := rc.Cached.List(ctx, list, client.InNamespace(namespace)); err != nil {
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
