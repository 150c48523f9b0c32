package drpc

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// place runs the step of the placement state machine the DRPC is in: the first
// deploy, an action (after the consensus gate), or the steady state.
func (r *Reconciler) place(ctx context.Context, s *scope) (ctrl.Result, error) {
	cur, tgt := s.current(), s.target()
	switch cur {
	case "":
		return r.deploy(ctx, s, tgt)
	case tgt:
		return r.steady(ctx, s)
	}
	if !s.inAction() {
		s.setPhase(drv1alpha1.DRStateInitiating, "%s of %s from %s to %s requested", s.drpc.Spec.Action, s.group.Name, cur, tgt)
		ok, err := r.gate(ctx, s)
		if err != nil || !ok {
			return flow.After(consensusRetry), err
		}
		// Persist the decision before any cluster is touched; the status write
		// wakes this DRPC again, unless it belongs to a global group.
		s.drpc.Status.ActionStartTime = nowTime(s)
		s.drpc.Status.ActionDuration = nil
		// One event says both that consensus was reached and that the action
		// starts: when a whole group agrees at once, every write the API server
		// is spared shortens the time until the last peer may proceed.
		consensus := ""
		if msg, ok := s.takeEvent(drv1alpha1.ReasonConsensusReached); ok {
			consensus = " (" + msg + ")"
		}
		if s.drpc.Spec.Action == drv1alpha1.ActionFailover {
			s.setProgression(drv1alpha1.ProgressionFailingOverToCluster)
			s.setPhase(drv1alpha1.DRStateFailingOver, "failing over %s from %s to %s%s", s.group.Name, cur, tgt, consensus)
		} else {
			s.setProgression(drv1alpha1.ProgressionPreparingFinalSync)
			s.setPhase(drv1alpha1.DRStateRelocating, "relocating %s from %s to %s%s", s.group.Name, cur, tgt, consensus)
		}
		if s.globalVGR() != "" {
			// The write of this decision does not wake this DRPC
			// (decisionWritten): the last peer to decide wakes the group, and
			// this reconcile is awaitGroupStart's bound when a peer never does.
			return flow.After(groupStartGrace), nil
		}
		return ctrl.Result{}, nil
	}
	if wait, err := r.awaitGroupStart(ctx, s); err != nil || wait > 0 {
		return flow.After(wait), err
	}
	if s.drpc.Spec.Action == drv1alpha1.ActionFailover {
		return r.failover(ctx, s, cur, tgt)
	}
	return r.relocate(ctx, s, cur, tgt)
}

// deploy places the application on the target for the first time: a
// primary VRG and the application running there, a secondary VRG and the
// application stopped on the other cluster.
func (r *Reconciler) deploy(ctx context.Context, s *scope, tgt string) (ctrl.Result, error) {
	s.setPhase(drv1alpha1.DRStateDeploying, "deploying %s to %s", s.group.Name, tgt)
	s.setProgression(drv1alpha1.ProgressionCreatingMW)
	if err := r.ensureVRG(ctx, s, tgt, drv1alpha1.Primary); err != nil {
		return ctrl.Result{}, err
	}
	running, err := r.ensureDesiredState(ctx, s, tgt, srv1alpha1.StateRunning)
	if err != nil {
		return ctrl.Result{}, err
	}
	if _, err := r.ensureSecondary(ctx, s, s.other(tgt)); err != nil {
		return ctrl.Result{}, err
	}
	if !running {
		s.waitFor("the application to run on %s (%s)", tgt, appState(s.copies[tgt]))
		return flow.After(waitRetry), nil
	}
	if !vrgReached(s.vrgs[tgt], drv1alpha1.PrimaryState) {
		// Deployed means protected from the start: the data is primary there.
		s.waitFor("the VRG on %s to become primary (%s)", tgt, vrgState(s.vrgs[tgt]))
		return flow.After(waitRetry), nil
	}
	if err := r.complete(ctx, s, tgt, drv1alpha1.DRStateDeployed); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// steady keeps the application where it is: primary VRG and running on the
// current cluster, stopped and secondary VRG on the other one. After a
// Failover this is also the cleanup of the old primary, whenever it
// is reachable again.
func (r *Reconciler) steady(ctx context.Context, s *scope) (ctrl.Result, error) {
	cur := s.current()
	if err := r.dropConfirmation(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if _, down := s.unreachable[cur]; down {
		// Nothing to do until the cluster returns or the user fails over.
		return flow.After(unreachableRetry), nil
	}
	if err := r.ensureVRG(ctx, s, cur, drv1alpha1.Primary); err != nil {
		return ctrl.Result{}, err
	}
	if _, err := r.ensureDesiredState(ctx, s, cur, srv1alpha1.StateRunning); err != nil {
		return ctrl.Result{}, err
	}
	done, err := r.ensureSecondary(ctx, s, s.other(cur))
	if err != nil {
		return ctrl.Result{}, err
	}
	if s.inAction() || s.drpc.Status.Phase == drv1alpha1.DRStateInitiating {
		// The action was withdrawn before it completed: the application stays.
		s.setPhase(phaseAtRest(s.drpc), "%s withdrawn; %s stays on %s", s.drpc.Status.Phase, s.group.Name, cur)
	}
	if meta.IsStatusConditionFalse(s.drpc.Status.Conditions, drv1alpha1.ConditionGlobalAction) {
		// A withdrawn or corrected action must not leave a stale block behind.
		if _, err := r.gate(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		if s.drpc.Status.Progression == drv1alpha1.ProgressionWaitOnGlobalAction {
			s.setProgression(drv1alpha1.ProgressionCompleted)
		}
	}
	switch {
	case done:
		s.setProgression(drv1alpha1.ProgressionCompleted)
	case s.drpc.Status.Phase == drv1alpha1.DRStateFailedOver:
		s.setProgression(drv1alpha1.ProgressionCleaningUp)
	}
	if !done {
		return flow.After(waitRetry), nil
	}
	return ctrl.Result{}, nil
}

// ensureSecondary stops the application on a cluster and, once it has stopped,
// makes its VRG secondary: a secondary VRG waits for PVCs no longer in use.
// It reports whether the VRG there is secondary; an unreachable cluster is not
// an error.
func (r *Reconciler) ensureSecondary(ctx context.Context, s *scope, cluster string) (bool, error) {
	if _, down := s.unreachable[cluster]; down {
		return false, nil
	}
	stopped, err := r.ensureDesiredState(ctx, s, cluster, srv1alpha1.StateStopped)
	if err != nil || !stopped {
		return false, err
	}
	if v := s.vrgs[cluster]; v == nil || v.Spec.ReplicationState != drv1alpha1.Secondary {
		// Checked before the first secondary write only: pg-controller then
		// keeps the group stopped there.
		running, err := r.runningVMI(ctx, s, cluster)
		if err != nil {
			return false, err
		}
		if running != "" {
			s.waitFor("VirtualMachineInstance %s on %s to be gone before its VRG turns secondary", running, cluster)
			return false, nil
		}
	}
	if err := r.ensureVRG(ctx, s, cluster, drv1alpha1.Secondary); err != nil {
		return false, err
	}
	return vrgReached(s.vrgs[cluster], drv1alpha1.SecondaryState), nil
}

// complete records that the application now runs on cluster.
func (r *Reconciler) complete(ctx context.Context, s *scope, cluster string, phase drv1alpha1.DRState) error {
	if err := r.flipActiveCluster(ctx, s, cluster); err != nil {
		return err
	}
	st := &s.drpc.Status
	st.PreferredDecision.ClusterName = cluster
	if st.ActionStartTime != nil && phase != drv1alpha1.DRStateDeployed {
		st.ActionDuration = durationSince(s, st.ActionStartTime)
	}
	window := ""
	if phase == drv1alpha1.DRStateFailedOver {
		window = s.dataLossWindow()
	}
	s.setPhase(phase, "%s runs on %s%s", s.group.Name, cluster, window)
	if phase == drv1alpha1.DRStateFailedOver {
		s.setProgression(drv1alpha1.ProgressionCleaningUp)
	} else {
		s.setProgression(drv1alpha1.ProgressionCompleted)
	}
	return nil
}

// phaseAtRest is the settled phase matching the DRPC's action.
func phaseAtRest(d *drv1alpha1.DRPlacementControl) drv1alpha1.DRState {
	switch d.Spec.Action {
	case drv1alpha1.ActionFailover:
		return drv1alpha1.DRStateFailedOver
	case drv1alpha1.ActionRelocate:
		return drv1alpha1.DRStateRelocated
	}
	return drv1alpha1.DRStateDeployed
}
