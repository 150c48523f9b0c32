package failover

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// checkTaints holds the promotion while a node of the target replicas carries
// the lost-quorum taint for another group. The node agent keeps that taint
// while a replica that is Primary on the node lacks quorum (nodeagent.Taints):
// it is the fence of the group in use there, never this request's to lift.
// With force the request removes it and goes on; otherwise the agent alone
// owns it. A taint whose only cause is this group's own replica (promoted with
// force, still with a Secondary's quorum) holds nothing: the start step turns
// that quorum off and the agent lifts the taint. A taint with no cause the
// replicas report (their status lags DRBD by a status write, or an older agent
// that tainted for Secondaries too) holds only while another group of the
// namespace runs on the target, as before the agent told its causes apart.
// The nodes and the groups are read through the API server: pg-controller's
// report of tainted nodes, or a cache, can lag a taint set a moment ago, and a
// request that missed it went on without removing it. A Waiting error says
// what holds it: the taint, the node and the group it is kept for.
func (r *Reconciler) checkTaints(ctx context.Context, s *scope, tgt *remote.Remote) error {
	res, err := s.replicasOf(ctx, tgt)
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%w", err)
	}
	tainted, err := taintedNodes(ctx, tgt, res)
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%w", err)
	}
	if len(tainted) == 0 {
		return nil
	}
	causes, err := taintCauses(ctx, tgt, tainted, res)
	if err != nil {
		return flow.Waiting(srv1alpha1.ReasonProgressing, unreachableRetry, "%w", err)
	}
	var held, why []string
	var unexplained []string
	for _, n := range tainted {
		c := causes[n]
		switch {
		case len(c.others) > 0:
			held = append(held, n)
			why = append(why, fmt.Sprintf("the node agent keeps it on %s for %s until that has quorum again or is Secondary", n, strings.Join(c.others, ", ")))
		case !c.own:
			unexplained = append(unexplained, n)
		}
	}
	// A replica's status change wakes the request, and the taint of a known
	// cause goes with one; a taint no replica explains may outlive the status
	// write that woke the request (the agent's patch retried), so that hold
	// looks again.
	var recheck time.Duration
	if len(unexplained) > 0 {
		others, err := otherRunningGroups(ctx, tgt, s.req.Namespace, s.group.Name)
		if err != nil {
			return err
		}
		if len(others) > 0 {
			held, recheck = append(held, unexplained...), unreachableRetry
			why = append(why, fmt.Sprintf("no replica on %s reports what it is kept for, and groups %s run there",
				strings.Join(unexplained, ", "), strings.Join(others, ", ")))
		}
	}
	if len(held) == 0 {
		return nil
	}
	sort.Strings(held)
	if !s.req.Spec.Force {
		msg := fmt.Sprintf("not removing %s from %s on %s: %s; wait, or set force to remove it",
			srv1alpha1.LostQuorumTaintKey, strings.Join(held, ", "), s.target(), strings.Join(why, "; "))
		s.trail.Condition(srv1alpha1.ConditionTargetPromoted, metav1.ConditionFalse, srv1alpha1.ReasonTaintConflict, msg)
		return flow.Waiting(srv1alpha1.ReasonTaintConflict, recheck, "%s", msg)
	}
	var removed []string
	for _, n := range held {
		ok, err := untaint(ctx, tgt, n)
		if err != nil {
			return err
		}
		if ok {
			removed = append(removed, n)
		}
	}
	// The taints are gone whatever happens to this reconcile's status write, so
	// the event is recorded now rather than with the status (a write conflict
	// would drop it, and the retry finds no taint to report).
	if r.Recorder != nil && len(removed) > 0 {
		r.Recorder.Eventf(s.req, corev1.EventTypeNormal, "TaintRemoved", "removed %s from %s on %s",
			srv1alpha1.LostQuorumTaintKey, strings.Join(removed, ", "), s.target())
	}
	return nil
}

// taintCause is why a node carries the lost-quorum taint, as the replicas on
// it report: own when a replica of the request's group is Primary there
// without quorum, others naming each other replica that is.
type taintCause struct {
	own    bool
	others []string
}

// taintCauses reads, for each tainted node, the replicas that are Primary on
// it without quorum: what the node agent keeps the taint for. Every DR
// namespace's replicas count, as the taint is the node's.
func taintCauses(ctx context.Context, rc *remote.Remote, nodes []string, own []srv1alpha1.DRBDResource) (map[string]taintCause, error) {
	list := &srv1alpha1.DRBDResourceList{}
	if err := rc.Cached.List(ctx, list, readOnly); err != nil {
		return nil, fmt.Errorf("listing DRBDResources on %s: %w", rc.Key.Cluster, err)
	}
	mine := map[client.ObjectKey]bool{}
	for i := range own {
		mine[client.ObjectKeyFromObject(&own[i])] = true
	}
	out := map[string]taintCause{}
	for _, n := range nodes {
		out[n] = taintCause{}
	}
	for i := range list.Items {
		d := &list.Items[i]
		c, tainted := out[d.Spec.NodeName]
		if !tainted || d.Status.Role != string(srv1alpha1.RolePrimary) || d.Status.Quorum {
			continue
		}
		if mine[client.ObjectKeyFromObject(d)] {
			c.own = true
		} else {
			c.others = append(c.others, fmt.Sprintf("group %s of DR namespace %s (replica %s/%s is Primary there without quorum)",
				d.Labels[srv1alpha1.ProtectionGroupLabel], d.Labels[srv1alpha1.DRNamespaceLabel], d.Namespace, d.Name))
		}
		out[d.Spec.NodeName] = c
	}
	for n, c := range out {
		sort.Strings(c.others)
		out[n] = c
	}
	return out, nil
}
