package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// fencingRecheck is how often a request held for fencing looks again without
// an event; the annotation, the source's return and DRBD changes all wake it.
const fencingRecheck = 30 * time.Second

// blockedReplica is a target replica whose DRBD sees a peer Primary and connected.
type blockedReplica struct {
	res   *srv1alpha1.DRBDResource
	peers []string // node names of the connected Primary peers
}

// connectedPrimaries lists the target replicas that a promotion would make a
// second Primary beside a connected one: DRBD refuses that, and forcing it
// after cutting the link is only safe once the peer is known fenced.
func connectedPrimaries(res []srv1alpha1.DRBDResource) []blockedReplica {
	var out []blockedReplica
	for i := range res {
		var peers []string
		for _, p := range res[i].Status.Peers {
			if p.ConnectionState == "Connected" && p.PeerRole == string(srv1alpha1.RolePrimary) {
				peers = append(peers, p.NodeName)
			}
		}
		if len(peers) > 0 {
			out = append(out, blockedReplica{res: &res[i], peers: peers})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].res.Name < out[j].res.Name })
	return out
}

// sourceStillPrimary decides an unplanned request whose target still sees the
// source Primary and connected. Nothing is promoted while that holds:
//   - the source's API server answers: stop the group there and demote it, as
//     a planned failover would (planned-safe), then promote normally;
//   - the operator confirmed the source fenced (SourceFencedAnnotation): the
//     target replicas disconnect from it (spec.fencedPeers), then promote with force;
//   - otherwise: hold with FencingRequired, saying what was seen and the two ways on.
//
// It returns nil when no target replica sees a connected Primary peer.
func (r *Reconciler) sourceStillPrimary(ctx context.Context, s *scope, tgt *remote.Remote, targetRes []srv1alpha1.DRBDResource) error {
	blocked := connectedPrimaries(targetRes)
	if len(blocked) == 0 {
		if c := meta.FindStatusCondition(s.req.Status.Conditions, srv1alpha1.ConditionFencingRequired); c != nil && c.Status == metav1.ConditionTrue {
			s.trail.Condition(srv1alpha1.ConditionFencingRequired, metav1.ConditionFalse, "SourceDisconnected",
				fmt.Sprintf("DRBD on %s no longer sees %s Primary and connected", s.target(), s.source()))
		}
		return nil
	}
	health := r.Remote.Health(s.key(s.source()))
	if health.Reachable() {
		return r.demoteReturnedSource(ctx, s)
	}
	if s.req.Annotations[srv1alpha1.SourceFencedAnnotation] == s.group.Name {
		return r.fenceSource(ctx, s, tgt, blocked)
	}
	since := s.now
	if c := meta.FindStatusCondition(s.req.Status.Conditions, srv1alpha1.ConditionFencingRequired); c != nil && c.Status == metav1.ConditionTrue {
		since = c.LastTransitionTime.Time
	}
	msg := fencingMessage(s, blocked, health, since)
	s.trail.Condition(srv1alpha1.ConditionFencingRequired, metav1.ConditionTrue, srv1alpha1.ReasonSourcePrimaryConnected, msg)
	return flow.Waiting(srv1alpha1.ReasonSourcePrimaryConnected, fencingRecheck, "%s", msg)
}

// fencingMessage says what was seen, what it means, and the two ways on.
func fencingMessage(s *scope, blocked []blockedReplica, health remote.Health, since time.Time) string {
	seen := make([]string, 0, len(blocked))
	for _, b := range blocked {
		seen = append(seen, fmt.Sprintf("%s (peer %s)", b.res.Name, strings.Join(b.peers, ", ")))
	}
	lastAnswer := "never answered since quorum-manager started"
	if !health.LastSuccessTime.IsZero() {
		lastAnswer = "last answered at " + health.LastSuccessTime.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("fencing required: DRBD on %s still sees %s Primary and connected for %s, seen since %s, while %s's API server does not answer (%s). "+
		"The VMs of group %s may still be running on %s, so promoting here would make a second Primary. "+
		"Either restore %s's API server, and this request continues as a planned-safe demotion (stop there, demote, then promote here); "+
		"or fence %s (power off its nodes or cut its replication network) and confirm it with: kubectl annotate failoverrequest -n %s %s %s=%s",
		s.target(), s.source(), strings.Join(seen, ", "), since.UTC().Format(time.RFC3339), s.source(), lastAnswer,
		s.group.Name, s.source(), s.source(), s.source(), s.req.Namespace, s.req.Name, srv1alpha1.SourceFencedAnnotation, s.group.Name)
}

// demoteReturnedSource stops the group on the source and demotes it there,
// once its API server answers again, before anything is promoted on the target.
func (r *Reconciler) demoteReturnedSource(ctx context.Context, s *scope) error {
	src, err := r.Remote.Get(s.key(s.source()))
	if err == nil {
		err = setDesiredState(ctx, src, s.req.Namespace, s.group.Name, srv1alpha1.StateStopped)
	}
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "%s answers again; stopping group %s there before demoting: %w", s.source(), s.group.Name, err)
	}
	pg, err := workloadGroup(ctx, src, s.req.Namespace, s.group.Name)
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%w", err)
	}
	if !settled(pg, srv1alpha1.StateStopped) {
		return flow.Waiting(srv1alpha1.ReasonProgressing, 0, "%s answers again: waiting for group %s to stop there before demoting it (currentState %q)", s.source(), s.group.Name, pg.Status.CurrentState)
	}
	s.trail.Condition(srv1alpha1.ConditionSourceStopped, metav1.ConditionTrue, "Stopped", fmt.Sprintf("every VM of %s stopped on %s", s.group.Name, s.source()))
	if done, msg := r.demoteSource(ctx, s); !done {
		return flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%s", msg)
	}
	s.trail.Condition(srv1alpha1.ConditionFencingRequired, metav1.ConditionFalse, srv1alpha1.ReasonSourceDemoted,
		fmt.Sprintf("%s answered again: group %s was stopped and DRBD demoted there before promoting %s", s.source(), s.group.Name, s.target()))
	return flow.Waiting(srv1alpha1.ReasonProgressing, 0, "waiting for DRBD on %s to become Secondary", s.source())
}

// fenceSource acts on the operator's confirmation: each blocked target replica
// drops its connection to the fenced peers, after which the promotion is forced.
func (r *Reconciler) fenceSource(ctx context.Context, s *scope, tgt *remote.Remote, blocked []blockedReplica) error {
	c := meta.FindStatusCondition(s.req.Status.Conditions, srv1alpha1.ConditionFencingRequired)
	if c == nil || c.Reason != srv1alpha1.ReasonSourceFenced {
		who := r.confirmedBy(ctx, s.req)
		msg := fmt.Sprintf("%s confirmed %s fenced; disconnecting %s from it and promoting with force", who, s.source(), s.target())
		s.trail.Condition(srv1alpha1.ConditionFencingRequired, metav1.ConditionFalse, srv1alpha1.ReasonSourceFenced, msg)
		s.trail.Events = append(s.trail.Events, flow.Event{Type: "Warning", Reason: srv1alpha1.ReasonSourceFenced, Message: msg})
	}
	if err := r.markFencedOff(ctx, s); err != nil {
		return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "%w", err)
	}
	var names []string
	if err := flow.ForEach(parallelWrites, len(blocked), func(i int) error {
		return setFencedPeers(ctx, tgt, blocked[i].res, blocked[i].peers)
	}); err != nil {
		return flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%w", err)
	}
	for _, b := range blocked {
		names = append(names, b.res.Name)
	}
	return flow.Waiting(srv1alpha1.ReasonProgressing, 0, "source %s confirmed fenced: waiting for DRBD on %s to disconnect from it: %s", s.source(), s.target(), flow.Listed(names))
}

// fenceDivergingSource fences the source off at the target before an
// unplanned promotion of replicas that do not replicate from it. Such a
// source may be cut off rather than down: its replicas stay Primary (a primary
// runs without quorum) and its VMs may write on, so two copies diverge. When
// its links return, DRBD would find both sides Primary while apart and drop
// the connection (a split brain), with the VMs still running there. So the
// group records the source as fenced off and each target replica drops it
// from its connections (spec.fencedPeers) first: on its return the two copies
// never meet, and the stand-down stops the group there and demotes it
// (standdown.go) until a rejoin discards its diverged writes (rejoin.go).
//
// A replica connected to a Secondary source needs no fence: DRBD replicated
// every write it acknowledged, and nothing diverges. One that is already
// Primary was promoted by an earlier pass, after its fence.
func (r *Reconciler) fenceDivergingSource(ctx context.Context, s *scope, tgt *remote.Remote, targetRes []srv1alpha1.DRBDResource) error {
	if !s.unplanned() {
		return nil
	}
	fence := map[int][]string{}
	for i := range targetRes {
		res := &targetRes[i]
		if res.Status.Role == string(srv1alpha1.RolePrimary) {
			continue
		}
		for _, p := range res.Spec.Peers {
			if p.Cluster != "" && p.Cluster != s.source() || slices.Contains(res.Spec.FencedPeers, p.NodeName) ||
				replicatesFrom(res, p.NodeName) {
				continue
			}
			fence[i] = append(fence[i], p.NodeName)
		}
	}
	if len(fence) == 0 {
		return nil
	}
	if err := r.markFencedOff(ctx, s); err != nil {
		return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "%w", err)
	}
	idx := make([]int, 0, len(fence))
	for i := range fence {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	if err := flow.ForEach(parallelWrites, len(idx), func(k int) error {
		return setFencedPeers(ctx, tgt, &targetRes[idx[k]], fence[idx[k]])
	}); err != nil {
		return flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%w", err)
	}
	names := make([]string, 0, len(idx))
	for _, i := range idx {
		names = append(names, targetRes[i].Name)
	}
	msg := fmt.Sprintf("DRBD on %s does not replicate from %s for %s: %s may still run its VMs, cut off, so %s fences it off (spec.fencedPeers) before promoting; when %s returns, group %s is stopped there and its replicas demoted, and its diverged writes are kept apart until a failback rejoins it",
		s.target(), s.source(), flow.Listed(names), s.source(), s.target(), s.source(), s.group.Name)
	s.trail.Events = append(s.trail.Events, flow.Event{Type: "Warning", Reason: srv1alpha1.ReasonSourceFencedOff, Message: msg})
	return flow.Waiting(srv1alpha1.ReasonProgressing, 0, "%s", msg)
}

// replicatesFrom: the replica is connected to peer and the peer is Secondary.
func replicatesFrom(res *srv1alpha1.DRBDResource, peer string) bool {
	for _, p := range res.Status.Peers {
		if p.NodeName == peer {
			return p.ConnectionState == "Connected" && p.PeerRole == string(srv1alpha1.RoleSecondary)
		}
	}
	return false
}

// parallelWrites bounds the writes to one workload cluster in flight at once.
const parallelWrites = 10

// setFencedPeers adds peers to a replica's spec.fencedPeers.
func setFencedPeers(ctx context.Context, rc *remote.Remote, res *srv1alpha1.DRBDResource, peers []string) error {
	want := slices.Clone(res.Spec.FencedPeers)
	for _, p := range peers {
		if !slices.Contains(want, p) {
			want = append(want, p)
		}
	}
	if len(want) == len(res.Spec.FencedPeers) {
		return nil
	}
	sort.Strings(want)
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"fencedPeers": want}})
	if err != nil {
		return err
	}
	obj := &srv1alpha1.DRBDResource{ObjectMeta: metav1.ObjectMeta{Namespace: res.Namespace, Name: res.Name}}
	if err := rc.Direct.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("fencing %s off DRBDResource %s/%s on %s: %w", strings.Join(peers, ", "), res.Namespace, res.Name, rc.Key.Cluster, err)
	}
	return nil
}

// confirmedBy names who set the confirmation and when, from the request's
// managedFields: Kubernetes records the client's field manager (for example
// "kubectl-annotate") and the time of its write, not the user, whom the API
// server's audit log names.
func (r *Reconciler) confirmedBy(ctx context.Context, req *srv1alpha1.FailoverRequest) string {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	fr := &srv1alpha1.FailoverRequest{}
	if err := reader.Get(ctx, client.ObjectKeyFromObject(req), fr); err != nil {
		return "an unrecorded field manager (reading the request: " + err.Error() + ")"
	}
	key := "f:" + srv1alpha1.SourceFencedAnnotation
	for _, mf := range fr.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]map[string]any
		if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		if _, ok := fields["f:metadata"]["f:annotations"][key]; !ok {
			continue
		}
		at := "an unrecorded time"
		if mf.Time != nil {
			at = mf.Time.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("field manager %q (from managedFields) at %s", mf.Manager, at)
	}
	return "an unrecorded field manager"
}

// fencedNote tells, at the end of a request that fenced its source off, how
// to fail back: the source stays cut off and its data diverged.
func fencedNote(s *scope) string {
	if !s.unplanned() || s.group.Annotations[srv1alpha1.FencedOffAnnotation] != s.source() {
		return ""
	}
	return fmt.Sprintf("; %s stays fenced off (spec.fencedPeers of the replicas on %s) and its data diverged: when it answers again, group %s is stopped there, its writes since it was fenced are discarded and it resyncs from %s. "+
		"To keep them, annotate ProtectionGroup %s %s=true before it returns; it then stays stopped and disconnected until the annotation goes, or until a planned FailoverRequest to %s annotated %s=%s rejoins it",
		s.source(), s.target(), s.group.Name, s.target(), s.group.Name, srv1alpha1.HoldDivergedAnnotation, s.source(), srv1alpha1.DiscardDivergedAnnotation, s.group.Name)
}
