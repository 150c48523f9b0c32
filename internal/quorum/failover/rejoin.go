package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// A failback to a cluster that was fenced off during an unplanned failover
// first rejoins it, while the group keeps running on the source:
//
//  1. the group is stopped on the target: its VMs may have kept running there
//     while it was cut off;
//  2. the request holds until the operator confirms, with
//     DiscardDivergedAnnotation, that the target's writes since it was fenced
//     may be discarded (its replicas stayed Primary, so their data diverged);
//  3. the target's replicas are demoted and discard their data (spec.discardData);
//  4. the source's replicas drop the target from spec.fencedPeers and
//     reconnect, and DRBD resyncs the target from the source;
//  5. once every replica is connected and in sync, the group's
//     FencedOffAnnotation is dropped, TargetRejoined turns True and the
//     failback runs as any planned one.
//
// TargetRejoined=False marks the rejoin under way, so that it is finished
// even after step 4 has removed the fencing it started from.

// rejoinRecheck is how often a rejoin looks again without an event: the
// resync progress and the annotation wake it too.
const rejoinRecheck = fencingRecheck

// fencedTargetPeers maps each source replica that fences off a node of the
// target to those nodes.
func fencedTargetPeers(srcRes []srv1alpha1.DRBDResource, target string) map[int][]string {
	out := map[int][]string{}
	for i := range srcRes {
		for _, p := range srcRes[i].Spec.Peers {
			if (p.Cluster == "" || p.Cluster == target) && slices.Contains(srcRes[i].Spec.FencedPeers, p.NodeName) {
				out[i] = append(out[i], p.NodeName)
			}
		}
	}
	return out
}

// rejoinFencedTarget runs the rejoin of a planned request whose target the
// source's replicas fence off; it returns nil when there is none to do, or
// once it is done.
func (r *Reconciler) rejoinFencedTarget(ctx context.Context, s *scope) error {
	if s.unplanned() {
		return nil
	}
	c := meta.FindStatusCondition(s.req.Status.Conditions, srv1alpha1.ConditionTargetRejoined)
	if c != nil && c.Status == metav1.ConditionTrue {
		return nil
	}
	src, err := r.Remote.Get(s.key(s.source()))
	if err != nil {
		if c == nil {
			return nil // the planned flow says that it cannot reach the source
		}
		return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "cannot reach source %s to rejoin %s: %w", s.source(), s.target(), err)
	}
	srcRes, err := s.replicasOf(ctx, src)
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonRejoining, unreachableRetry, "%w", err)
	}
	fenced := fencedTargetPeers(srcRes, s.target())
	if len(fenced) == 0 && c == nil {
		return nil
	}
	if c == nil {
		s.trail.Condition(srv1alpha1.ConditionTargetRejoined, metav1.ConditionFalse, srv1alpha1.ReasonRejoining,
			fmt.Sprintf("%s was fenced off during an unplanned failover and its data diverged; rejoining it before failing back", s.target()))
	}
	tgt, err := r.Remote.Get(s.key(s.target()))
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "cannot reach %s, which was fenced off during an unplanned failover, to rejoin it before failing back: %w", s.target(), err)
	}
	// 1. Its VMs may have run on while it was cut off.
	if err := setDesiredState(ctx, tgt, s.req.Namespace, s.group.Name, srv1alpha1.StateStopped); err != nil {
		return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "rejoining %s: %w", s.target(), err)
	}
	pg, err := workloadGroup(ctx, tgt, s.req.Namespace, s.group.Name)
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonRejoining, unreachableRetry, "%w", err)
	}
	if !settled(pg, srv1alpha1.StateStopped) {
		return flow.Waiting(srv1alpha1.ReasonRejoining, 0, "rejoining %s, which was fenced off: waiting for group %s to stop there, where its VMs may have kept running (currentState %q); it keeps running on %s",
			s.target(), s.group.Name, pg.Status.CurrentState, s.source())
	}
	tgtRes, err := s.replicasOf(ctx, tgt)
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonRejoining, unreachableRetry, "%w", err)
	}
	// 2. Discarding writes is the operator's call.
	if s.req.Annotations[srv1alpha1.DiscardDivergedAnnotation] != s.group.Name {
		msg := fmt.Sprintf("%s was fenced off during an unplanned failover and its DRBD data diverged from %s's (%d replicas): failing back discards the writes made on %s since then and resyncs it in full from %s, while group %s keeps running on %s. "+
			"Group %s is stopped on %s. Confirm, with the disaster-operator role: kubectl annotate failoverrequest -n %s %s %s=%s; or delete this request to stay on %s",
			s.target(), s.source(), len(tgtRes), s.target(), s.source(), s.group.Name, s.source(),
			s.group.Name, s.target(), s.req.Namespace, s.req.Name, srv1alpha1.DiscardDivergedAnnotation, s.group.Name, s.source())
		s.trail.Condition(srv1alpha1.ConditionTargetRejoined, metav1.ConditionFalse, srv1alpha1.ReasonTargetDiverged, msg)
		return flow.Waiting(srv1alpha1.ReasonTargetDiverged, rejoinRecheck, "%s", msg)
	}
	// 3. Demote and discard the target's replicas, once: a replica that
	// reports this request's discard is not asked again, so that a retry
	// after the ask was cleared (a status write that conflicted) neither
	// discards a resynced replica a second time nor leaves the ask set.
	discarding, err := discardOnce(ctx, tgt, tgtRes, string(s.req.UID))
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonRejoining, unreachableRetry, "%w", err)
	}
	if len(discarding) > 0 {
		s.trail.Condition(srv1alpha1.ConditionTargetRejoined, metav1.ConditionFalse, srv1alpha1.ReasonRejoining,
			fmt.Sprintf("confirmed; discarding the diverged data of %s and resyncing it from %s", s.target(), s.source()))
		return flow.Waiting(srv1alpha1.ReasonRejoining, 0, "rejoining %s: waiting for DRBD there to be Secondary and discard its diverged data: %s", s.target(), flow.Listed(discarding))
	}
	// 4. Reconnect: the source's replicas let the target back in.
	idx := make([]int, 0, len(fenced))
	for i := range fenced {
		idx = append(idx, i)
	}
	if err := flow.ForEach(parallelWrites, len(idx), func(k int) error {
		return unfence(ctx, src, &srcRes[idx[k]], fenced[idx[k]])
	}); err != nil {
		return flow.Waiting(srv1alpha1.ReasonRejoining, unreachableRetry, "%w", err)
	}
	// 5. Wait for the resync.
	gaps, err := r.sourceGaps(ctx, s)
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "%w", err)
	}
	behind := describeGaps(gaps)
	if notUpToDate := staleReplicas(tgtRes); behind != "" || len(notUpToDate) > 0 {
		return flow.Waiting(srv1alpha1.ReasonRejoining, rejoinRecheck, "rejoining %s: resyncing it from %s, where group %s keeps running; not yet UpToDate on %s: %s%s",
			s.target(), s.source(), s.group.Name, s.target(), flow.Listed(notUpToDate), behind)
	}
	if err := flow.ForEach(parallelWrites, len(tgtRes), func(i int) error {
		return clearDiscard(ctx, tgt, &tgtRes[i])
	}); err != nil {
		return flow.Waiting(srv1alpha1.ReasonRejoining, unreachableRetry, "%w", err)
	}
	if err := r.clearFencedOff(ctx, s); err != nil {
		return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "%w", err)
	}
	s.trail.Condition(srv1alpha1.ConditionTargetRejoined, metav1.ConditionTrue, "Resynced",
		fmt.Sprintf("%s's diverged data was discarded and resynced from %s; failing back", s.target(), s.source()))
	return nil
}

// staleReplicas names the replicas whose disks are not all UpToDate.
func staleReplicas(res []srv1alpha1.DRBDResource) []string {
	var out []string
	for _, d := range res {
		ok := len(d.Status.Volumes) > 0
		for _, v := range d.Status.Volumes {
			ok = ok && v.DiskState == "UpToDate"
		}
		if !ok {
			out = append(out, d.Name)
		}
	}
	sort.Strings(out)
	return out
}

// discardOnce asks each replica that has not carried out the discard token
// to be Secondary and discard its data (standDown), and lists, sorted, those
// that have not reported it done yet.
func discardOnce(ctx context.Context, rc *remote.Remote, res []srv1alpha1.DRBDResource, token string) ([]string, error) {
	if err := flow.ForEach(parallelWrites, len(res), func(i int) error {
		if res[i].Status.DataDiscarded == token {
			return nil
		}
		return standDown(ctx, rc, &res[i], token)
	}); err != nil {
		return nil, err
	}
	var pending []string
	for _, d := range res {
		if d.Status.DataDiscarded != token {
			pending = append(pending, d.Name)
		}
	}
	sort.Strings(pending)
	return pending, nil
}

// standDown makes a fenced-off replica Secondary, with a secondary's quorum,
// and asks its agent to discard its data (token: once per request).
func standDown(ctx context.Context, rc *remote.Remote, res *srv1alpha1.DRBDResource, token string) error {
	q := srv1alpha1.QuorumForRole(srv1alpha1.RoleSecondary)
	if res.Spec.Role == srv1alpha1.RoleSecondary && !res.Spec.ForcePromotion && res.Spec.Quorum == q && res.Spec.DiscardData == token {
		return nil
	}
	return patchDRBD(ctx, rc, res, map[string]any{
		"role": srv1alpha1.RoleSecondary, "forcePromotion": false, "discardData": token,
		"quorum": map[string]string{"policy": string(q.Policy), "onNoQuorum": string(q.OnNoQuorum)},
	})
}

// unfence removes nodes from a replica's spec.fencedPeers.
func unfence(ctx context.Context, rc *remote.Remote, res *srv1alpha1.DRBDResource, nodes []string) error {
	keep := slices.DeleteFunc(slices.Clone(res.Spec.FencedPeers), func(p string) bool { return slices.Contains(nodes, p) })
	if len(keep) == len(res.Spec.FencedPeers) {
		return nil
	}
	var v any = keep
	if len(keep) == 0 {
		v = nil
	}
	return patchDRBD(ctx, rc, res, map[string]any{"fencedPeers": v})
}

// clearDiscard drops a carried-out spec.discardData.
func clearDiscard(ctx context.Context, rc *remote.Remote, res *srv1alpha1.DRBDResource) error {
	if res.Spec.DiscardData == "" {
		return nil
	}
	return patchDRBD(ctx, rc, res, map[string]any{"discardData": nil})
}

func patchDRBD(ctx context.Context, rc *remote.Remote, res *srv1alpha1.DRBDResource, spec map[string]any) error {
	body, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	obj := &srv1alpha1.DRBDResource{ObjectMeta: metav1.ObjectMeta{Namespace: res.Namespace, Name: res.Name}}
	if err := rc.Direct.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("patching DRBDResource %s/%s on %s: %w", res.Namespace, res.Name, rc.Key.Cluster, err)
	}
	return nil
}
