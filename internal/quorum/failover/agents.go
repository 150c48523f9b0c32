package failover

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
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
		rc, err := r.Remote.Get(s.key(cluster))
		if err != nil || r.Remote.Health(s.key(cluster)).Unreachable() {
			return // the phase reports a cluster it cannot reach
		}
		replicas, err := drbdResources(ctx, rc, s.group.Name)
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
			if since, down := agentSilent(ctx, rc, node, s.now); down {
				silent = append(silent, fmt.Sprintf("node %s on %s (last heartbeat %s)", node, cluster, since))
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

// agentSilent reads a node's heartbeat Lease and reports when it was last
// renewed and whether it has expired.
func agentSilent(ctx context.Context, rc *remote.Remote, node string, now time.Time) (string, bool) {
	l := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: srv1alpha1.AgentHeartbeatNamespace, Name: srv1alpha1.AgentHeartbeatName(node)}
	if err := rc.Direct.Get(ctx, key, l); err != nil || l.Spec.RenewTime == nil {
		return "", false // no heartbeat, or unreadable: nothing known against the agent
	}
	expiry := l.Spec.RenewTime.Add(time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second)
	return l.Spec.RenewTime.UTC().Format(time.RFC3339), now.After(expiry)
}
