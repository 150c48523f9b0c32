package failover

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// syncGap is what a source replica still has to send to its peers.
type syncGap struct {
	bytes     int64
	connected bool
}

func (g syncGap) behind() bool { return g.bytes > 0 || !g.connected }

// sourceGaps reads, for each source replica of the group (by name, which the
// target replica shares), the bytes DRBD reports out of sync towards its peers
// and whether it is connected. A planned failover promotes a target replica
// only when its source has nothing left to send: the target's own view cannot
// know the writes made after the link dropped.
func (r *Reconciler) sourceGaps(ctx context.Context, s *scope) (map[string]syncGap, error) {
	src, err := r.Remote.Get(s.key(s.source()))
	if err != nil {
		return nil, fmt.Errorf("cannot reach source %s to read its replication state: %w", s.source(), err)
	}
	res, err := s.replicasOf(ctx, src)
	if err != nil {
		return nil, err
	}
	out := make(map[string]syncGap, len(res))
	for _, d := range res {
		g := syncGap{connected: len(d.Status.Peers) > 0}
		for _, p := range d.Status.Peers {
			g.connected = g.connected && p.ConnectionState == "Connected"
			for _, v := range p.Volumes {
				g.bytes += v.OutOfSyncBytes
			}
		}
		out[d.Name] = g
	}
	return out, nil
}

// describeGaps lists the replicas still behind, for a message.
func describeGaps(gaps map[string]syncGap) string {
	var out []string
	for name, g := range gaps {
		if !g.behind() {
			continue
		}
		state := "connected"
		if !g.connected {
			state = "disconnected"
		}
		out = append(out, fmt.Sprintf("%s %d bytes out of sync (%s)", name, g.bytes, state))
	}
	if len(out) == 0 {
		return ""
	}
	sort.Strings(out)
	return "; " + flow.Listed(out)
}

// abortResync ends a planned failover whose target did not become UpToDate
// within drainTimeoutSeconds. The safe state is the one before the request:
// any target replica asked to promote is demoted again, the source replicas
// are made Primary again, and only then is the group asked to run on the
// source. Each step waits for the one before; the last fails the request.
func (r *Reconciler) abortResync(ctx context.Context, s *scope, tgt *remote.Remote, targetRes []srv1alpha1.DRBDResource, gaps map[string]syncGap) error {
	behind := describeGaps(gaps)
	// Recorded first: from now on the request restores the source and never
	// demotes it again (restoring).
	s.trail.Condition(srv1alpha1.ConditionTargetPromoted, metav1.ConditionFalse, srv1alpha1.ReasonTargetNotUpToDate,
		"the target did not become UpToDate within drainTimeoutSeconds; restoring the source"+behind)
	if _, err := setStep(ctx, tgt, s.req.Namespace, s.group.Name, stopAndDemote()); err != nil {
		return flow.Waiting(srv1alpha1.ReasonDrainTimeout, unreachableRetry, "drain timeout: demoting %s again: %w", s.target(), err)
	}
	var primaries []string
	for i := range targetRes {
		if targetRes[i].Status.Role == string(srv1alpha1.RolePrimary) {
			primaries = append(primaries, targetRes[i].Name)
		}
	}
	if len(primaries) > 0 {
		sort.Strings(primaries)
		return flow.Waiting(srv1alpha1.ReasonDrainTimeout, 0, "drain timeout: waiting for %s to be Secondary again before restoring %s: %s", s.target(), s.source(), flow.Listed(primaries))
	}
	if pg, _ := workloadGroup(ctx, tgt, s.req.Namespace, s.group.Name); !carries(pg, targetRes, secondaryIntent()) {
		return flow.Waiting(srv1alpha1.ReasonDrainTimeout, 0, "drain timeout: waiting for pg-controller on %s to ask every replica to be Secondary again before restoring %s", s.target(), s.source())
	}
	src, err := r.Remote.Get(s.key(s.source()))
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "drain timeout: cannot reach source %s to restore it: %w", s.source(), err)
	}
	if _, err := setStep(ctx, src, s.req.Namespace, s.group.Name, stoppedAs(primaryIntent())); err != nil {
		return flow.Waiting(srv1alpha1.ReasonDrainTimeout, unreachableRetry, "drain timeout: promoting %s again: %w", s.source(), err)
	}
	srcRes, err := s.replicasOf(ctx, src)
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonDrainTimeout, unreachableRetry, "%w", err)
	}
	var waiting []string
	for i := range srcRes {
		if srcRes[i].Status.Role != string(srv1alpha1.RolePrimary) {
			waiting = append(waiting, srcRes[i].Name)
		}
	}
	if len(waiting) > 0 {
		sort.Strings(waiting)
		return flow.Waiting(srv1alpha1.ReasonDrainTimeout, 0, "drain timeout: waiting for DRBD on %s to be Primary again before restarting the group there: %s%s", s.source(), flow.Listed(waiting), refusals(srcRes))
	}
	if _, err := setStep(ctx, src, s.req.Namespace, s.group.Name, runAgain()); err != nil {
		return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "drain timeout: restarting group %s on %s: %w", s.group.Name, s.source(), err)
	}
	s.trail.Condition(srv1alpha1.ConditionTargetPromoted, metav1.ConditionFalse, srv1alpha1.ReasonTargetNotUpToDate,
		"the target did not become UpToDate within drainTimeoutSeconds; the source was restored"+behind)
	return flow.Stalled(srv1alpha1.ReasonTargetNotUpToDate, "DRBD on %s did not become UpToDate within drainTimeoutSeconds=%d%s; nothing was promoted on %s, DRBD is Primary on %s again and group %s was asked to run there",
		s.target(), s.req.Spec.DrainTimeoutSeconds, behind, s.target(), s.source(), s.group.Name)
}

// restoring reports whether a planned request already began restoring its
// source after the target did not become UpToDate in time.
func restoring(s *scope) bool {
	c := meta.FindStatusCondition(s.req.Status.Conditions, srv1alpha1.ConditionTargetPromoted)
	return !s.unplanned() && c != nil && c.Reason == srv1alpha1.ReasonTargetNotUpToDate
}
