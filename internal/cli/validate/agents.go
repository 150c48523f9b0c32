package validate

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli/clusters"
)

// heartbeatGrace is how far past its expiry an agent's heartbeat must be
// before it counts as stale: the renewal time is the node's clock, the
// comparison this machine's, and the clock-skew check reports a larger skew.
const heartbeatGrace = 5 * time.Second

// heartbeat is what a node's agent Lease says.
type heartbeat struct {
	found   bool
	renewed time.Time
	expiry  time.Time
}

func (h heartbeat) fresh(now time.Time) bool {
	return h.found && !now.After(h.expiry.Add(heartbeatGrace))
}

func (h heartbeat) String() string {
	if !h.found {
		return "no heartbeat"
	}
	return "last renewed " + h.renewed.UTC().Format(time.RFC3339)
}

// agents checks that the drbd-node-agent of every node holding a replica
// renews its heartbeat Lease. It reads those Leases one by one (the quorum
// identity in the zone's Secrets may get Leases, and may not list
// DaemonSets or pods) plus the node list, to tell a cluster without agents
// from one where only some nodes lack them.
func (z *zoneCheck) agents(ctx context.Context, cl *clusters.Cluster) {
	t := z.target(cl.Name)
	holders := z.replicaNodes(ctx, cl)
	nodes := holders
	list := &corev1.NodeList{}
	if err := cl.Client.List(ctx, list); err == nil {
		nodes = nil
		for _, n := range list.Items {
			nodes = append(nodes, n.Name)
		}
	}
	beats := map[string]heartbeat{}
	for _, n := range unique(append(append([]string{}, holders...), nodes...)) {
		h, err := readHeartbeat(ctx, cl.Client, n)
		if err != nil {
			z.r.add("drbd-agent", t, Warning, fmt.Sprintf("cannot read the agent heartbeat Lease %s/%s: %v",
				srv1alpha1.AgentHeartbeatNamespace, srv1alpha1.AgentHeartbeatName(n), err), "")
			return
		}
		beats[n] = h
	}
	s, msg, fix := agentVerdict(holders, nodes, beats, time.Now())
	z.r.add("drbd-agent", t, s, msg, fix)
}

func readHeartbeat(ctx context.Context, c client.Reader, node string) (heartbeat, error) {
	l := &coordinationv1.Lease{}
	err := c.Get(ctx, client.ObjectKey{Namespace: srv1alpha1.AgentHeartbeatNamespace, Name: srv1alpha1.AgentHeartbeatName(node)}, l)
	switch {
	case apierrors.IsNotFound(err):
		return heartbeat{}, nil
	case err != nil:
		return heartbeat{}, err
	case l.Spec.RenewTime == nil:
		return heartbeat{}, nil
	}
	renewed := l.Spec.RenewTime.Time
	return heartbeat{found: true, renewed: renewed,
		expiry: renewed.Add(time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second)}, nil
}

// agentVerdict scores the heartbeats: a node holding a replica without a
// fresh one is a problem, named; so is a cluster where no node has one,
// since nothing could replicate there. Nodes without a replica may run no
// agent (the chart's nodeSelector picks the DRBD nodes).
func agentVerdict(holders, nodes []string, beats map[string]heartbeat, now time.Time) (Score, string, string) {
	const where = "on that node: kubectl get pods -A -o wide -l app.kubernetes.io/name=drbd-node-agent --field-selector spec.nodeName=<node>; the node may lack the DRBD module, or the agent may tolerate none of its taints"
	var stale []string
	for _, n := range holders {
		if h := beats[n]; !h.fresh(now) {
			stale = append(stale, n+" ("+h.String()+")")
		}
	}
	if len(stale) > 0 {
		return Problem, fmt.Sprintf("no fresh drbd-node-agent heartbeat (%s/%s<node>) on nodes holding replicas: %s; DRBD there is neither changed nor reported",
			srv1alpha1.AgentHeartbeatNamespace, srv1alpha1.AgentHeartbeatPrefix, strings.Join(stale, ", ")), "check the agent " + where
	}
	fresh := 0
	for _, n := range nodes {
		if beats[n].fresh(now) {
			fresh++
		}
	}
	if fresh == 0 {
		return Problem, fmt.Sprintf("no node of %d has a fresh drbd-node-agent heartbeat", len(nodes)),
			"install the workload-control-plane chart on this cluster; if it is installed, check the agent " + where
	}
	return OK, fmt.Sprintf("a drbd-node-agent heartbeat is fresh on %d of %d nodes, including the %d holding replicas", fresh, len(nodes), len(holders)), ""
}

func unique(in []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
