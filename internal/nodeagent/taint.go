package nodeagent

import (
	"context"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/drbd"
)

// RBAC on the workload cluster: the agent reads its own Node uncached and
// patches the Node's taints. RBAC cannot name the node (the names differ per
// pod); the workload chart's siterecovery-drbd-node-agent-scope policy lets
// the agent change only the lost-quorum taint of the node in its token.
// +kubebuilder:rbac:groups=core,resources=nodes,verbs=get;patch

// Taints keeps this node's drbd.linbit.com/lost-quorum:NoSchedule taint in line
// with DRBD: present while a resource that is Primary on the node lacks quorum,
// removed only when none does. It patches nothing but the node's taint list, with
// an optimistic lock so that concurrent changes to other taints are never
// clobbered.
//
// Only a Primary counts. Upstream (piraeus-ha-controller) taints a node so
// that replacement pods are not scheduled onto storage that cannot serve
// them: its failover reconciler (pkg/agent/reconcile_failover.go) taints the
// node where a volume without quorum is in use, and its agent
// (ManageOwnTaints, pkg/agent/agent.go) any node with a replica without
// quorum, because LINSTOR's CSI driver may attach a pod on any replica's node
// and promote it there. Here nothing opens a Secondary: a group's VMs start
// on a cluster only once every replica of the group is Primary there, and a
// Secondary without quorum cannot be promoted (DRBD refuses, and a failover
// promotes with force only after its own checks). So a Secondary's lost
// quorum protects nothing by tainting its node, and the node-wide taint would
// keep every other group's VMs off it: a partition of the primary left every
// DR node tainted by the Secondaries of groups still running on the primary,
// and an unplanned failover of another group could not schedule its VMs.
type Taints struct {
	Client   client.Client // writes the Node
	Reader   client.Reader // reads the Node uncached (the agent does not cache Nodes)
	NodeName string
	Watcher  *Watcher
	Clock    clock.WithTicker
	Log      logr.Logger
	// Resync re-checks the taint periodically (someone may remove it); default 1m.
	Resync time.Duration
	// RetryAfter is the wait after a failed update; default 2s.
	RetryAfter time.Duration

	kick chan struct{}
}

// NewTaints returns a Taints controller; Kick it on every DRBD state change.
func NewTaints(c client.Client, r client.Reader, node string, w *Watcher, clk clock.WithTicker, log logr.Logger) *Taints {
	return &Taints{Client: c, Reader: r, NodeName: node, Watcher: w, Clock: clk, Log: log,
		Resync: time.Minute, RetryAfter: 2 * time.Second, kick: make(chan struct{}, 1)}
}

// Kick asks for a re-evaluation; it never blocks.
func (t *Taints) Kick() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (t *Taints) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (t *Taints) Start(ctx context.Context) error {
	ticker := t.Clock.NewTicker(t.Resync)
	defer ticker.Stop()
	var retry <-chan time.Time
	// ensured is the taint state this loop last made true on the node. A kick
	// (any events2 change: with --statistics, every few seconds per resource
	// under I/O) that does not change what is wanted reads nothing. A taint
	// someone else removed (a failover with force beside another group, the
	// one case where anyone but the agent removes it) therefore stays removed until the wanted state changes or the
	// resync, instead of coming back at the next unrelated DRBD event.
	var ensured *bool
	for {
		kicked := false
		select {
		case <-ctx.Done():
			return nil
		case <-t.kick:
			kicked = true
		case <-ticker.C():
		case <-retry:
		}
		retry = nil
		if !t.Watcher.Synced() {
			continue // the first dump kicks again
		}
		want := lacksQuorum(t.Watcher)
		tainted := len(want) > 0
		if kicked && ensured != nil && *ensured == tainted {
			continue
		}
		if err := t.ensure(ctx, want); err != nil {
			t.Log.Error(err, "updating node taint", "taint", srv1alpha1.LostQuorumTaintKey, "present", want)
			retry, ensured = t.Clock.After(t.RetryAfter), nil
			continue
		}
		ensured = &tainted
	}
}

// lacksQuorum lists the DRBD resources that are Primary on the node and have
// lost quorum: the only ones the taint protects (see Taints).
func lacksQuorum(w *Watcher) []string {
	return w.tracker.Matching(primaryWithoutQuorum)
}

// primaryWithoutQuorum reports whether a resource is one the node's
// lost-quorum taint is kept for: Primary on the node, in use there, and
// without quorum.
func primaryWithoutQuorum(r *drbd.ResourceStatus) bool {
	return r.Role == string(srv1alpha1.RolePrimary) && r.LacksQuorum()
}

func isLostQuorumTaint(t corev1.Taint) bool {
	return t.Key == srv1alpha1.LostQuorumTaintKey && t.Effect == corev1.TaintEffectNoSchedule
}

// ensure makes the taint present iff lost is not empty. It is idempotent.
func (t *Taints) ensure(ctx context.Context, lost []string) error {
	want := len(lost) > 0
	for attempt := 0; ; attempt++ {
		var node corev1.Node
		if err := t.Reader.Get(ctx, types.NamespacedName{Name: t.NodeName}, &node); err != nil {
			return err
		}
		has := slices.ContainsFunc(node.Spec.Taints, isLostQuorumTaint)
		if has == want {
			return nil
		}
		base := node.DeepCopy()
		if want {
			now := metav1.NewTime(t.Clock.Now())
			node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: srv1alpha1.LostQuorumTaintKey,
				Effect: corev1.TaintEffectNoSchedule, TimeAdded: &now})
		} else {
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, isLostQuorumTaint)
		}
		err := t.Client.Patch(ctx, &node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) && attempt < 5 {
			continue
		}
		if err == nil {
			t.Log.Info("node taint updated", "taint", srv1alpha1.LostQuorumTaintKey, "present", want, "resourcesWithoutQuorum", lost)
		}
		return err
	}
}
