package failover

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// activeRequestsOfCluster wakes the working requests of a DR namespace when
// one of its clusters becomes unreachable or answers again: a phase waiting
// for an event from that cluster would otherwise sleep through the outage
// with a message that no longer holds, and through the cluster's return.
func (r *Reconciler) activeRequestsOfCluster(ctx context.Context, key remote.Key) []reconcile.Request {
	return r.activeRequests(ctx, key.Namespace, "")
}

// holdForUnreachable holds a phase whose cluster does not answer. The cache of
// an unreachable cluster answers with what it saw last, so a phase reading it
// would wait on stale state and say so as if it were current ("waiting for
// DRBD to be promoted"), or time out on it. Holding instead says what the
// request waits for, changes nothing on either cluster (the source is never
// restarted while the target may hold Primary), and resumes when the cluster
// answers again: the phase's own deadlines then apply.
//
// A planned request needs its source while stopping it; every request needs
// its target from the DRBD move on. An unplanned request does not need its
// source at all.
func (r *Reconciler) holdForUnreachable(ctx context.Context, s *scope) error {
	var cluster, role, holding string
	switch s.req.Status.Phase {
	case srv1alpha1.FailoverFreezingOnSource, srv1alpha1.FailoverStoppingOnSource:
		if s.unplanned() {
			return nil
		}
		cluster, role = s.source(), "source"
		holding = "nothing was promoted on " + s.target() + " and nothing changes until " + s.source() + " answers"
	case srv1alpha1.FailoverWaitingForDRBD:
		cluster, role = s.target(), "target"
		holding = "nothing more is promoted, and " + s.source() + " is not restarted while " + s.target() + " may hold Primary"
	case srv1alpha1.FailoverStartingOnTarget:
		cluster, role = s.target(), "target"
		holding = "DRBD is Primary there; " + s.source() + " stays stopped"
	default:
		return nil
	}
	if err := r.loadGroupAndZone(ctx, s); err != nil {
		return err
	}
	if viaDRPC(s.zone) {
		return nil // the DRPC path mirrors its DRPlacementControl (drpc.go)
	}
	h := r.Remote.Health(s.key(cluster))
	if !h.Unreachable() {
		return r.holdForSilentAgents(ctx, s)
	}
	since := "it was never reached"
	if !h.LastSuccessTime.IsZero() {
		since = "its API server has not answered since " + h.LastSuccessTime.UTC().Format(time.RFC3339)
	}
	cause := ""
	if h.Err != nil {
		cause = fmt.Sprintf(" (%d probes failed: %s)", h.FailedProbes, h.Err.Error())
	}
	return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry,
		"cannot reach %s %s: %s%s; holding in %s: %s; the request resumes when %s answers",
		role, cluster, since, cause, s.req.Status.Phase, holding, cluster)
}
