package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/drbd"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// unreachableRetry is how soon a phase that could not reach a cluster retries;
// remote watches usually wake it earlier.
const unreachableRetry = 5 * time.Second

// pending validates the request and takes the group's Lease.
func (r *Reconciler) pending(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.loadGroupAndZone(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if !inZone(s.zone, s.target()) {
		return ctrl.Result{}, flow.Stalled(srv1alpha1.ReasonInvalidTarget, "targetCluster %q is not a cluster of zone %s (clusters: %s)", s.target(), s.zone.Name, strings.Join(zoneClusters(s.zone), ", "))
	}
	lock, err := r.acquire(ctx, s.req, s.group.Name, s.now, r.holderDone(ctx, s.req.Namespace))
	if err != nil {
		return ctrl.Result{}, err
	}
	if !lock.held {
		msg := lockHeldMessage(s.req, s.group.Name, lock)
		s.trail.Condition(srv1alpha1.ConditionLockAcquired, metav1.ConditionFalse, srv1alpha1.ReasonLockHeld, msg)
		wait := lock.expiry.Sub(s.now)
		if lock.keeper != nil {
			// The keeper's renewals and its release wake this request (a
			// Lease watch); this bounds the wait if an event is missed.
			wait = renewEvery
		}
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonLockHeld, wait, "%s", msg)
	}
	s.trail.Condition(srv1alpha1.ConditionLockAcquired, metav1.ConditionTrue, "Acquired", "holding Lease "+srv1alpha1.FailoverLockName(s.group.Name))
	// Re-validate under the lock, on the group as the API server has it: an
	// earlier request may have moved the group, and the cache may not show it
	// yet (its watch resuming after the quorum API server came back), which
	// would end this request as done with nothing moved.
	if err := r.readGroupFresh(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if s.group.Spec.ActiveCluster == s.target() {
		s.trail.Succeed(srv1alpha1.ReasonAlreadyOnTarget, "group %s already runs on %s; nothing to do", s.group.Name, s.target())
		return ctrl.Result{}, nil
	}
	if s.group.Spec.ActiveCluster == "" || !inZone(s.zone, s.group.Spec.ActiveCluster) {
		return ctrl.Result{}, flow.Stalled(srv1alpha1.ReasonInvalidSpec, "group %s has no valid activeCluster (%q)", s.group.Name, s.group.Spec.ActiveCluster)
	}
	s.trail.Condition(srv1alpha1.ConditionValidated, metav1.ConditionTrue, "Valid", fmt.Sprintf("%s failover of %s from %s to %s", s.req.Spec.FailoverType, s.group.Name, s.group.Spec.ActiveCluster, s.target()))
	s.req.Status.SourceCluster = s.group.Spec.ActiveCluster
	// A failback to a cluster fenced off in an unplanned failover resyncs it
	// first, while the group still runs on the source (rejoin.go).
	// An unplanned request to a cluster still fenced off holds (fencedoff.go).
	if !viaDRPC(s.zone) {
		if err := holdFencedOffTarget(s); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.rejoinFencedTarget(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	s.req.Status.StartTime = &metav1.Time{Time: s.now}
	if s.unplanned() {
		s.trail.Condition(srv1alpha1.ConditionDataLossRisk, metav1.ConditionTrue, srv1alpha1.ReasonUnplanned, unplannedRisk(s.zone, s.group))
	}
	if viaDRPC(s.zone) {
		// Offloaded and VolSync groups move through their DRPlacementControl (drpc.go).
		return r.startDRPC(ctx, s)
	}
	if freezesFirst(s) {
		s.trail.Enter(srv1alpha1.FailoverFreezingOnSource, "freezing the guests of group %s on %s until the DR replicas hold every write, then stopping them frozen", s.group.Name, s.source())
		return ctrl.Result{}, nil
	}
	s.trail.Enter(srv1alpha1.FailoverStoppingOnSource, "stopping group %s on %s", s.group.Name, s.source())
	return ctrl.Result{}, nil
}

// stoppingOnSource asks the source's ProtectionGroup to stop and demote its
// replicas (stopAndDemote: its pg-controller demotes once every VM stopped)
// and waits until it reports stopped. An unplanned failover asks, but does
// not wait.
func (r *Reconciler) stoppingOnSource(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.loadGroupAndZone(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	group := s.group.Name
	src, err := r.Remote.Get(s.key(s.source()))
	if err == nil {
		err = r.asked.ask(ctx, s, src, stopAndDemote())
	}
	if s.unplanned() {
		if err != nil {
			s.trail.Condition(srv1alpha1.ConditionSourceStopped, metav1.ConditionUnknown, srv1alpha1.ReasonSourceUnreachable,
				"source not reached, proceeding without it: "+err.Error())
		} else {
			s.trail.Condition(srv1alpha1.ConditionSourceStopped, metav1.ConditionUnknown, srv1alpha1.ReasonUnplanned,
				"asked the source to stop; not waiting for it")
		}
		s.trail.Enter(srv1alpha1.FailoverWaitingForDRBD, "unplanned: promoting %s without waiting for %s", s.target(), s.source())
		return ctrl.Result{}, nil
	}
	if d := r.drainLeft(s); d <= 0 {
		return ctrl.Result{}, r.abortDrain(ctx, s, src)
	}
	if err != nil {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, min(unreachableRetry, r.drainLeft(s)), "cannot reach source %s yet: %w", s.source(), err)
	}
	pg, err := workloadGroup(ctx, src, s.req.Namespace, group)
	if err != nil {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, min(unreachableRetry, r.drainLeft(s)), "%w", err)
	}
	if !settled(pg, srv1alpha1.StateStopped) {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, r.drainLeft(s), "waiting for group %s to stop on %s (currentState %q)", group, s.source(), pg.Status.CurrentState)
	}
	holdFrozen(s)
	s.trail.Condition(srv1alpha1.ConditionSourceStopped, metav1.ConditionTrue, "Stopped", fmt.Sprintf("every VM of %s stopped on %s", group, s.source()))
	s.trail.Enter(srv1alpha1.FailoverWaitingForDRBD, "group %s stopped on %s; moving DRBD primary to %s", group, s.source(), s.target())
	return ctrl.Result{}, nil
}

func (r *Reconciler) drainLeft(s *scope) time.Duration {
	limit := time.Duration(s.req.Spec.DrainTimeoutSeconds) * time.Second
	return s.trail.EnteredAt(srv1alpha1.FailoverStoppingOnSource).Add(limit).Sub(s.now)
}

// abortDrain ends a planned failover whose VMs did not stop in time (a Stalled
// error). Nothing was promoted, so the safe state is the one before the request:
// the group is asked to run on the source again, its replicas Primary there
// (they may have been demoted if the last VM stopped at the deadline), and
// the target is left untouched.
func (r *Reconciler) abortDrain(ctx context.Context, s *scope, src *remote.Remote) error {
	r.thawSource(ctx, s, src)
	restored, err := restartSource(ctx, s, src)
	if err != nil {
		return err
	}
	s.trail.Condition(srv1alpha1.ConditionSourceStopped, metav1.ConditionFalse, srv1alpha1.ReasonDrainTimeout, "VMs did not stop in time")
	return flow.Stalled(srv1alpha1.ReasonDrainTimeout, "VMs of %s did not stop on %s within drainTimeoutSeconds=%d; nothing was promoted on %s and %s",
		s.group.Name, s.source(), s.req.Spec.DrainTimeoutSeconds, s.target(), restored)
}

// restartSource asks the group to run on the source again, Primary there,
// after a planned failover gave up before promoting anything; it says what
// became of the source, for the request's message.
func restartSource(ctx context.Context, s *scope, src *remote.Remote) (string, error) {
	if src == nil {
		return "the source could not be reached to restart it", nil
	}
	if _, err := setStep(ctx, src, s.req.Namespace, s.group.Name, runAgain()); err != nil {
		return "", err
	}
	return "the group was asked to run on " + s.source() + " again", nil
}

// startingOnTarget asks the target's ProtectionGroup to run with its replicas
// Primary (promoteAndRun, already asked by a planned failover's promotion)
// and waits until every VM runs. After an unplanned failover the same write
// gives the new primaries the quorum of their role (off, see QuorumForRole),
// which their forced promotion did not carry, and stops allowing force.
func (r *Reconciler) startingOnTarget(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.loadGroupAndZone(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	limit := time.Duration(s.req.Spec.BatchBootTimeoutSeconds) * time.Second
	left := s.trail.EnteredAt(srv1alpha1.FailoverStartingOnTarget).Add(limit).Sub(s.now)
	tgt, err := r.Remote.Get(s.key(s.target()))
	if err == nil {
		err = r.asked.ask(ctx, s, tgt, promoteAndRun())
	}
	var pg *srv1alpha1.ProtectionGroup
	if err == nil {
		pg, err = workloadGroup(ctx, tgt, s.req.Namespace, s.group.Name)
	}
	// The target's boot plan, stage by stage (boot.go); one that stopped
	// will not start its later stages however long the request waits.
	followBoot(s, pg)
	if err == nil && bootStopped(pg) {
		return ctrl.Result{}, r.stopOnBootPlan(ctx, s, pg.Status.Boot)
	}
	if err == nil && settled(pg, srv1alpha1.StateRunning) {
		if err := r.flipActiveCluster(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		s.trail.Condition(srv1alpha1.ConditionTargetRunning, metav1.ConditionTrue, "Running", fmt.Sprintf("every VM of %s runs on %s", s.group.Name, s.target()))
		s.trail.Succeed(srv1alpha1.ReasonFailoverCompleted, "group %s runs on %s; %s is now its active cluster%s", s.group.Name, s.target(), s.target(), fencedNote(s))
		return ctrl.Result{}, nil
	}
	if left <= 0 {
		// The data is now primary on the target, so the target is the active
		// cluster; the group stays asked to run there and nothing restarts on the
		// source, which keeps VMs off two clusters at once.
		if ferr := r.flipActiveCluster(ctx, s); ferr != nil {
			return ctrl.Result{}, ferr
		}
		s.trail.Condition(srv1alpha1.ConditionTargetRunning, metav1.ConditionFalse, srv1alpha1.ReasonBootTimeout, "VMs did not all run in time")
		state, late := "unknown", "not reported"
		if pg != nil {
			state, late = string(pg.Status.CurrentState), notRunning(pg)
		}
		return ctrl.Result{}, flow.Stalled(srv1alpha1.ReasonBootTimeout, "VMs of %s did not all run on %s within batchBootTimeoutSeconds=%d (currentState %s; not running: %s); the group stays on %s, already promoted: DRBD is primary there, it is now the active cluster and keeps trying to start them; the source stays stopped",
			s.group.Name, s.target(), s.req.Spec.BatchBootTimeoutSeconds, state, late, s.target())
	}
	if err != nil {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, min(unreachableRetry, left), "cannot reach target %s yet: %w", s.target(), err)
	}
	waiting := fmt.Sprintf("waiting for group %s to run on %s (currentState %q)", s.group.Name, s.target(), pg.Status.CurrentState)
	if stage := bootProgress(s.req.Status.Boot); stage != "" {
		waiting += "; " + stage
	}
	if why := vmProblems(pg); why != "" {
		// Say at once what keeps a VM from starting (a launcher pod the
		// scheduler cannot place), not only when the boot timeout ends.
		waiting += "; " + why
	}
	return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, left, "%s", waiting)
}

// vmProblems names the VMs of a workload copy that report a problem, with it.
func vmProblems(pg *srv1alpha1.ProtectionGroup) string {
	var out []string
	for _, vm := range pg.Status.VirtualMachines {
		if vm.PrintableStatus != "Running" && vm.Message != "" {
			out = append(out, fmt.Sprintf("%s/%s %s", vm.Namespace, vm.Name, vm.Message))
		}
	}
	return strings.Join(out, "; ")
}

// flipActiveCluster makes the target the group's active cluster on the quorum
// copy, so that a later request back to the source is a failback.
// The patch is written whatever the cached group says: a cache that lags may
// already show the target while the API server does not.
func (r *Reconciler) flipActiveCluster(ctx context.Context, s *scope) error {
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"activeCluster": s.target()}})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, s.group, client.RawPatch(types.MergePatchType, body)); err != nil {
		return err
	}
	s.group.Spec.ActiveCluster = s.target()
	return nil
}

// readGroupFresh reads the request's group through the API server.
func (r *Reconciler) readGroupFresh(ctx context.Context, s *scope) error {
	if r.APIReader == nil {
		return nil // unit tests: the client reads the API server already
	}
	return r.APIReader.Get(ctx, client.ObjectKeyFromObject(s.group), s.group)
}

func unplannedRisk(z *srv1alpha1.ProtectionZone, g *srv1alpha1.ProtectionGroup) string {
	if viaDRPC(z) {
		return "unplanned failover with the " + string(z.Spec.StorageBackend) + " backend: writes the storage had not yet replicated (up to one replication interval) may be lost"
	}
	if g.Spec.Replication.Protocol == srv1alpha1.ProtocolC {
		return "unplanned failover under protocol C: writes acknowledged before the source failed are on the target; writes in flight at that moment may be lost"
	}
	return fmt.Sprintf("unplanned failover under protocol A: writes acknowledged on the source but not yet replicated may be lost: those in DRBD's send buffer, at most %s per replica (sndbuf-size %s, which Linux doubles), and those the source held out of sync",
		quantity(drbd.ProtocolALossBound), quantity(drbd.ProtocolASendBuffer))
}

// quantity prints bytes as Kubernetes does ("4Mi").
func quantity(bytes int64) string { return resource.NewQuantity(bytes, resource.BinarySI).String() }

func inZone(z *srv1alpha1.ProtectionZone, cluster string) bool {
	for _, c := range z.Spec.Clusters {
		if c.Name == cluster {
			return true
		}
	}
	return false
}

func zoneClusters(z *srv1alpha1.ProtectionZone) []string {
	out := make([]string, 0, len(z.Spec.Clusters))
	for _, c := range z.Spec.Clusters {
		out = append(out, c.Name)
	}
	return out
}

// notRunning names the VMs of a workload copy that do not run, with their
// state, for the boot-timeout message.
func notRunning(pg *srv1alpha1.ProtectionGroup) string {
	var out []string
	for _, vm := range pg.Status.VirtualMachines {
		if vm.PrintableStatus != "Running" {
			state := vm.PrintableStatus
			if vm.Message != "" {
				state += ": " + vm.Message
			}
			out = append(out, fmt.Sprintf("%s/%s (%s)", vm.Namespace, vm.Name, state))
		}
	}
	if len(out) == 0 {
		return "none reported"
	}
	return strings.Join(out, ", ")
}
