package protectiongroup

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/fence"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// FieldOwner is the field manager of the role, forcePromotion and quorum this
// controller sets on the group's DRBDResources from spec.drbd.
const FieldOwner = "siterecovery-pg-controller"

// loadDRBD reads the group's replicas on this cluster and which of their
// nodes carry the lost-quorum taint, from the cache.
func (r *Reconciler) loadDRBD(ctx context.Context, s *scope) (ctrl.Result, error) {
	replicas, err := Replicas(ctx, r.Client, s.group, readOnly)
	if err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	s.replicas = replicas
	s.taintedNodes, err = TaintedNodes(ctx, r.Client, replicas, readOnly)
	if err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	s.drbdLoaded = true
	return ctrl.Result{}, nil
}

// applyDRBDIntent sets spec.drbd on every replica of the group whose spec
// disagrees, in parallel (bounded); s.applied says whether all of them now
// carry it. Writing the role here, on the cluster itself, is what lets a
// failover step cost one write per group across sites instead of one per VM.
func (r *Reconciler) applyDRBDIntent(ctx context.Context, s *scope) (ctrl.Result, error) {
	in := s.group.Spec.DRBD
	if in == nil {
		return ctrl.Result{}, nil
	}
	if Demotes(in, s.replicas) {
		held := vmsWithInstance(s)
		if len(held) == 0 {
			var err error
			if held, err = r.liveInstances(ctx, s); err != nil {
				return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, err)
			}
		}
		if len(held) > 0 {
			// The VMIs' deletion events wake the group.
			s.holds = append(s.holds, demotionHold(held))
			return ctrl.Result{}, nil
		}
	}
	patched, err := ApplyDRBDIntent(ctx, r.Client, in, s.replicas)
	s.asked = s.asked || patched > 0
	if err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonPatchFailed, err)
	}
	s.applied = true
	return ctrl.Result{}, nil
}

// Replicas lists the group's DRBDResources on the cluster: those labelled with
// its name, except those a DR namespace label gives to another namespace's group.
// opts add to the list's options (readOnly).
func Replicas(ctx context.Context, c client.Reader, group *srv1alpha1.ProtectionGroup, opts ...client.ListOption) ([]srv1alpha1.DRBDResource, error) {
	list := &srv1alpha1.DRBDResourceList{}
	if err := c.List(ctx, list, append(opts, client.MatchingLabels{srv1alpha1.ProtectionGroupLabel: group.Name})...); err != nil {
		return nil, fmt.Errorf("listing DRBDResources of %s: %w", group.Name, err)
	}
	out := list.Items[:0]
	for _, d := range list.Items {
		if ns, ok := d.Labels[srv1alpha1.DRNamespaceLabel]; ok && ns != group.Namespace {
			continue
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out, nil
}

// WantedSpec is the role, forcePromotion and quorum intent asks of one replica.
// Force is decided per replica, and only while intent allows it: where DRBD
// refuses or would refuse a normal promotion (not promotable, refused, or cut
// off a fenced peer). A force already asked together with Primary stays (by
// an earlier step, or the protection flow's initial sync, which clears it
// itself), so that a later step does not re-ask the replica. Without a quorum
// in the intent the replica keeps its own, or that of a secondary if it has
// none yet.
func WantedSpec(in *srv1alpha1.GroupDRBDIntent, res *srv1alpha1.DRBDResource) (srv1alpha1.DRBDRole, bool, srv1alpha1.QuorumSettings) {
	force := false
	if in.Role == srv1alpha1.RolePrimary {
		force = res.Spec.Role == srv1alpha1.RolePrimary && res.Spec.ForcePromotion
		if in.Force && res.Status.Role != string(srv1alpha1.RolePrimary) &&
			(!res.Status.Promotable || promotionRefused(res) || len(res.Spec.FencedPeers) > 0) {
			force = true
		}
	}
	q := res.Spec.Quorum
	switch {
	case in.Quorum != nil:
		q = *in.Quorum
	case q.Policy == "":
		q = srv1alpha1.QuorumForRole(srv1alpha1.RoleSecondary)
	}
	return in.Role, force, q
}

// ApplyDRBDIntent patches, in one merge patch each, the replicas whose role,
// forcePromotion or quorum differ from what intent asks (WantedSpec), and
// returns how many it asked to change.
func ApplyDRBDIntent(ctx context.Context, c client.Client, in *srv1alpha1.GroupDRBDIntent, replicas []srv1alpha1.DRBDResource) (int, error) {
	var patch []int
	for i := range replicas {
		role, force, q := WantedSpec(in, &replicas[i])
		sp := replicas[i].Spec
		if sp.Role != role || sp.ForcePromotion != force || sp.Quorum != q {
			patch = append(patch, i)
		}
	}
	return len(patch), flow.ForEach(parallelPatches, len(patch), func(i int) error {
		res := &replicas[patch[i]]
		role, force, q := WantedSpec(in, res)
		body, err := json.Marshal(map[string]any{"spec": map[string]any{
			"role": role, "forcePromotion": force,
			"quorum": map[string]string{"policy": string(q.Policy), "onNoQuorum": string(q.OnNoQuorum)},
		}})
		if err != nil {
			return err
		}
		obj := &srv1alpha1.DRBDResource{ObjectMeta: metav1.ObjectMeta{Namespace: res.Namespace, Name: res.Name}}
		switch err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body), client.FieldOwner(FieldOwner)); {
		case apierrors.IsNotFound(err):
			return nil // deleted since it was read
		case err != nil:
			return fmt.Errorf("setting role %s on DRBDResource %s/%s: %w", role, res.Namespace, res.Name, err)
		}
		res.Spec.Role, res.Spec.ForcePromotion, res.Spec.Quorum = role, force, q
		return nil
	})
}

// DRBDStatus is the group's status.drbd: each replica's state and the tainted
// nodes, and appliedGeneration when applied says spec.drbd is on every replica
// (it keeps the one before otherwise). Nil for a group with neither replicas
// nor intent.
func DRBDStatus(group *srv1alpha1.ProtectionGroup, replicas []srv1alpha1.DRBDResource, tainted []string, applied bool) *srv1alpha1.GroupDRBDStatus {
	if len(replicas) == 0 && group.Spec.DRBD == nil {
		return nil
	}
	st := &srv1alpha1.GroupDRBDStatus{TaintedNodes: tainted}
	if prev := group.Status.DRBD; prev != nil {
		st.AppliedGeneration = prev.AppliedGeneration
	}
	if applied {
		st.AppliedGeneration = group.Generation
	}
	for i := range replicas {
		st.Replicas = append(st.Replicas, replicaStatus(&replicas[i]))
	}
	return st
}

func replicaStatus(res *srv1alpha1.DRBDResource) srv1alpha1.ReplicaRoleStatus {
	out := srv1alpha1.ReplicaRoleStatus{Name: res.Name, Namespace: res.Namespace, NodeName: res.Spec.NodeName,
		Role: res.Status.Role, Promotable: res.Status.Promotable, Message: refusal(res)}
	out.UpToDate = len(res.Status.Volumes) > 0
	for _, v := range res.Status.Volumes {
		out.UpToDate = out.UpToDate && v.DiskState == "UpToDate"
	}
	out.Connected = len(res.Status.Peers) > 0
	for _, p := range res.Status.Peers {
		out.Connected = out.Connected && p.ConnectionState == "Connected"
		out.PeerPrimary = out.PeerPrimary || p.PeerRole == string(srv1alpha1.RolePrimary)
	}
	return out
}

// TaintedNodes lists, sorted, the replicas' nodes that carry the lost-quorum
// taint (fence.TaintedNodes).
func TaintedNodes(ctx context.Context, c client.Reader, replicas []srv1alpha1.DRBDResource, opts ...client.GetOption) ([]string, error) {
	return fence.TaintedNodes(ctx, c, replicas, opts...)
}

func promotionRefused(res *srv1alpha1.DRBDResource) bool { return refusal(res) != "" }

// refusal is the message of a promotion the agent refused, if any.
func refusal(res *srv1alpha1.DRBDResource) string {
	for _, c := range res.Status.Conditions {
		if c.Type == srv1alpha1.ConditionRoleApplied && c.Status == metav1.ConditionFalse && c.Reason == srv1alpha1.ReasonPromotionRefused {
			return c.Message
		}
	}
	return ""
}
