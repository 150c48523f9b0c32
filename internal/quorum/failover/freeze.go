package failover

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/freeze"
	"github.com/siterecovery/siterecovery/internal/freeze/drain"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// pointSource names a planned failover's points in ConsistencyPoint.source.
const pointSource = "PlannedFailover"

// freezesFirst reports whether a planned failover of the group freezes its
// source guests before it stops them: a DRBD group that asks for
// Application consistency.
func freezesFirst(s *scope) bool {
	c := s.group.Spec.Consistency
	return !s.unplanned() && !viaDRPC(s.zone) && c != nil && c.Mode == srv1alpha1.ConsistencyApplication
}

// freezingOnSource freezes the group's running guests on the source, waits
// (within freezeTimeoutSeconds) until the DR replicas hold every write they
// completed, and asks the group to stop while they are frozen: the target is
// then promoted from disks a frozen guest left, whatever the guests' shutdown
// does. The stop ends the freeze, or KubeVirt at the bound; a stop that
// could not be asked thaws them at once and the step is retried. A guest
// whose agent does not answer, or replicas that do not drain in time, never
// hold the failover: the point is Crash and says which and why.
//
// The step runs within one reconcile. A quorum-manager that stopped after
// asking the stop and before recording the point finds the source asked to
// stop when it resumes: whether the guests were frozen then is not known,
// and the point is recorded Crash saying so.
func (r *Reconciler) freezingOnSource(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.loadGroupAndZone(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	src, err := r.Remote.Get(s.key(s.source()))
	if err != nil {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "cannot reach source %s to freeze its guests: %w", s.source(), err)
	}
	if pg, err := workloadGroup(ctx, src, s.req.Namespace, s.group.Name); err == nil && asksStep(pg, stopAndDemote()) {
		p := freeze.CrashPoint(pointSource, s.now, "quorum-manager resumed after asking the source to stop; whether the guests were still frozen when they stopped is not known")
		return ctrl.Result{}, r.recordPlannedPoint(ctx, s, &p)
	}
	spec := s.group.Spec.Consistency
	bound := time.Duration(spec.FreezeTimeoutSeconds) * time.Second
	vms, err := runningGuests(ctx, src, s.group)
	if err != nil {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "%w", err)
	}
	replicas, why := r.drainReplicas(ctx, s, src)
	fc, err := freeze.NewRESTClient(src.Config)
	if err != nil {
		return ctrl.Result{}, err
	}
	var lacking string
	take := func(tctx context.Context) error {
		if why == "" {
			lacking = drain.Wait(tctx, src.Direct, replicas)
		}
		// Asked with the reconcile's context: the stop goes out even when
		// the drain used up the freeze's bound.
		return r.asked.ask(ctx, s, src, stopAndDemote())
	}
	p, err := freeze.Point(ctx, fc, vms, freeze.Options{Bound: bound, Source: pointSource, Now: r.Clock.Now, Hold: true}, take)
	if err != nil {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "the guests were thawed; asking group %s to stop on %s: %w", s.group.Name, s.source(), err)
	}
	if why == "" && lacking != "" {
		why = fmt.Sprintf("the DR replicas did not hold every write within the freeze bound of %s: %s", bound, lacking)
	}
	if why != "" {
		p.Consistency = srv1alpha1.ConsistencyCrash
		p.Message = truncate(joinWhy(why, p.Message), 1024)
	}
	return ctrl.Result{}, r.recordPlannedPoint(ctx, s, &p)
}

// drainReplicas are the source replicas of the group with the node of their
// DR peer; why says what keeps them from being checked.
func (r *Reconciler) drainReplicas(ctx context.Context, s *scope, src *remote.Remote) ([]drain.Replica, string) {
	srcRes, err := s.replicasOf(ctx, src)
	if err != nil {
		return nil, err.Error()
	}
	tgt, err := r.Remote.Get(s.key(s.target()))
	if err != nil {
		return nil, fmt.Sprintf("the target %s could not be reached to find its replicas: %v", s.target(), err)
	}
	tgtRes, err := s.replicasOf(ctx, tgt)
	if err != nil {
		return nil, err.Error()
	}
	nodes := map[string]string{}
	for _, t := range tgtRes {
		nodes[t.Name] = t.Spec.NodeName
	}
	out := make([]drain.Replica, 0, len(srcRes))
	for _, d := range srcRes {
		node, ok := nodes[d.Name]
		if !ok {
			return nil, fmt.Sprintf("replica %s/%s has no DR replica on %s", d.Namespace, d.Name, s.target())
		}
		out = append(out, drain.Replica{Key: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, PeerNode: node, Protocol: d.Spec.Protocol})
	}
	return out, ""
}

// runningGuests are the group's VMs whose VMI runs on the source: a stopped
// VM writes nothing and needs no freeze.
func runningGuests(ctx context.Context, src *remote.Remote, g *srv1alpha1.ProtectionGroup) ([]types.NamespacedName, error) {
	var vms []types.NamespacedName
	for _, ref := range g.Spec.VirtualMachines {
		key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
		vmi := &kubevirtv1.VirtualMachineInstance{}
		err := src.Direct.Get(ctx, key, vmi)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading VirtualMachineInstance %s on %s: %w", key, src.Key.Cluster, err)
		case vmi.Status.Phase == kubevirtv1.Running:
			vms = append(vms, key)
		}
	}
	return vms, nil
}

// recordPlannedPoint records p as the point the target will be promoted
// from, on the request and as the group's last point, and goes on to stop
// the group.
func (r *Reconciler) recordPlannedPoint(ctx context.Context, s *scope, p *srv1alpha1.ConsistencyPoint) error {
	s.req.Status.Consistency = p
	g, err := freeze.RecordLastPoint(ctx, r.Client, s.group, p)
	if err != nil {
		return err
	}
	s.group = g
	s.trail.Enter(srv1alpha1.FailoverStoppingOnSource, "%s; stopping group %s on %s", describePoint(p), s.group.Name, s.source())
	return nil
}

// describePoint is a point in one line, for the request's timeline.
func describePoint(p *srv1alpha1.ConsistencyPoint) string {
	out := fmt.Sprintf("%s point: %d VMs frozen (longest %dms)", p.Consistency, len(p.FrozenVMs), p.FrozenMilliseconds)
	if len(p.CrashConsistentVMs) > 0 {
		out += fmt.Sprintf(", crash-consistent: %v", p.CrashConsistentVMs)
	}
	if p.Message != "" {
		out += ": " + p.Message
	}
	return out
}

// thawSource thaws the guests a request froze, best effort, when it gives
// up stopping them and asks them to run on the source again: a guest still
// running must not wait for KubeVirt's bound. A guest already stopped has
// nothing to thaw.
func (r *Reconciler) thawSource(ctx context.Context, s *scope, src *remote.Remote) {
	p := s.req.Status.Consistency
	if p == nil || len(p.FrozenVMs) == 0 || src == nil || src.Config == nil {
		return
	}
	fc, err := freeze.NewRESTClient(src.Config)
	if err != nil {
		return
	}
	for _, name := range p.FrozenVMs {
		ns, n, ok := strings.Cut(name, "/")
		if ok {
			_ = fc.Unfreeze(ctx, types.NamespacedName{Namespace: ns, Name: n})
		}
	}
}

// holdFrozen extends the point's frozenMilliseconds to the stop: the guests
// stayed frozen until they stopped, or until the bound.
func holdFrozen(s *scope) {
	p := s.req.Status.Consistency
	if p == nil || len(p.FrozenVMs) == 0 || s.group.Spec.Consistency == nil {
		return
	}
	bound := time.Duration(s.group.Spec.Consistency.FreezeTimeoutSeconds) * time.Second
	began := p.Time.Add(-time.Duration(p.FrozenMilliseconds) * time.Millisecond)
	p.FrozenMilliseconds = max(p.FrozenMilliseconds, min(s.now.Sub(began), bound).Milliseconds())
}

func joinWhy(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
