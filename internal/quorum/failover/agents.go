package failover

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// The agents' heartbeat Leases, read on the workload clusters.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get,namespace=workload-cluster

// ReasonAgentSilent is the reason of a hold: a node agent the DRBD move needs has not renewed its
// heartbeat in time.
const ReasonAgentSilent = "AgentSilent"

// holdForSilentAgents holds the DRBD move while the drbd-node-agent of a node
// it needs is silent: the target's nodes whose replicas are still to be
// promoted and, in a planned request, the source's nodes still Primary. DRBD
// there neither changes nor reports until the agent runs again, which the
// phase's own message ("waiting for DRBD to be promoted") would not say. A
// node without a heartbeat Lease runs an agent that has none; it is not held for.
func (r *Reconciler) holdForSilentAgents(ctx context.Context, s *scope) error {
	if s.req.Status.Phase != srv1alpha1.FailoverWaitingForDRBD || viaDRPC(s.zone) {
		return nil
	}
	var silent []string
	check := func(cluster string, needs func(*srv1alpha1.DRBDResource) bool) {
		rc, err := remote.Answering(r.Remote, s.key(cluster))
		if err != nil {
			return // the phase reports a cluster it cannot reach
		}
		replicas, err := s.replicasOf(ctx, rc)
		if err != nil {
			return
		}
		nodes := map[string]bool{}
		for i := range replicas {
			if needs(&replicas[i]) {
				nodes[replicas[i].Spec.NodeName] = true
			}
		}
		for node := range nodes {
			hb, known := r.agentSilent(ctx, rc, cluster, node, s.now)
			switch {
			case !known:
			case hb.silent:
				silent = append(silent, fmt.Sprintf("node %s on %s (last heartbeat %s)", node, cluster, hb.renewed))
			default:
				// Nothing else wakes the request when an agent stops: look
				// again just after its heartbeat would expire.
				s.wakeAt(hb.expiry.Add(heartbeatGrace + time.Second/4))
			}
		}
	}
	check(s.target(), func(d *srv1alpha1.DRBDResource) bool { return d.Status.Role != string(srv1alpha1.RolePrimary) })
	if !s.unplanned() {
		check(s.source(), func(d *srv1alpha1.DRBDResource) bool { return d.Status.Role == string(srv1alpha1.RolePrimary) })
	}
	if len(silent) == 0 {
		return nil
	}
	sort.Strings(silent)
	return flow.Waiting(ReasonAgentSilent, unreachableRetry,
		"the drbd-node-agent of %s has not renewed its heartbeat Lease (%s/%s<node>) in time: DRBD there is neither changed nor reported until it runs again; check the agent's pod on that node; holding in %s, the request resumes when the agent renews",
		strings.Join(silent, ", "), srv1alpha1.AgentHeartbeatNamespace, srv1alpha1.AgentHeartbeatPrefix, s.req.Status.Phase)
}

// heartbeatGrace is how far past its expiry a heartbeat must be before its
// agent counts as silent: a reconcile that reads the Lease just before the
// agent renews it must not make a running agent flap between silent and not.
const heartbeatGrace = 2 * time.Second

// leaseReuse is how long a heartbeat Lease read serves the reconciles of
// every request: a failover reconciles on each replica its agents report,
// many times a second, while an agent renews once a second and counts as
// silent only seconds after its Lease expired. A read at most this old delays
// seeing a silent agent by as much.
const leaseReuse = 500 * time.Millisecond

// agentSilent reads a node's heartbeat Lease (or reuses a read younger than
// leaseReuse) and judges it by r.heartbeats; known is false when the node has
// no heartbeat or it is unreadable: nothing is known against the agent then.
func (r *Reconciler) agentSilent(ctx context.Context, rc *remote.Remote, cluster, node string, now time.Time) (heartbeatState, bool) {
	elapsed := r.Elapsed
	if elapsed == nil {
		elapsed = clock.RealClock{}
	}
	id := cluster + "/" + node
	l, ok := r.heartbeats.recent(id, elapsed.Now())
	if !ok {
		l = &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: srv1alpha1.AgentHeartbeatNamespace, Name: srv1alpha1.AgentHeartbeatName(node)}
		if err := rc.Direct.Get(ctx, key, l); err != nil {
			return heartbeatState{}, false
		}
		r.heartbeats.read(id, l, elapsed.Now())
	}
	if l.Spec.RenewTime == nil {
		return heartbeatState{}, false
	}
	return r.heartbeats.observe(id, l, now, elapsed), true
}
