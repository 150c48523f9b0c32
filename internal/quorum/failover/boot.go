package failover

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// The target's pg-controller runs the group's boot plan and reports it in
// the target copy's status.boot; StartingOnTarget mirrors it into the
// request, stalls at once when the plan stopped, and splits the phase's time
// across the stages. Planned failover, failback and unplanned failover all
// start the group through that one phase.

// followBoot copies the target copy's status.boot into the request, once the
// copy is asked to run: before that it is the boot of an earlier start (a copy
// asked to stop clears it). The status writer writes it when it changed.
func followBoot(s *scope, pg *srv1alpha1.ProtectionGroup) {
	if pg == nil || pg.Spec.DesiredState != srv1alpha1.StateRunning || pg.Status.Boot == nil {
		return
	}
	if !equality.Semantic.DeepEqual(s.req.Status.Boot, pg.Status.Boot) {
		// pg is the cache's (readOnly): the request gets a copy of its own.
		s.req.Status.Boot = pg.Status.Boot.DeepCopy()
	}
}

// bootStopped reports whether the target copy says, for the spec it
// observed, that its boot plan stopped: a stage timed out or failed and
// onStageTimeout is Stop, so its later stages will not start.
func bootStopped(pg *srv1alpha1.ProtectionGroup) bool {
	return pg != nil && pg.Spec.DesiredState == srv1alpha1.StateRunning && pg.Status.ObservedGeneration == pg.Generation &&
		pg.Status.Boot != nil && pg.Status.Boot.Stopped
}

// stopOnBootPlan ends a request whose boot plan stopped on the target, without
// waiting for batchBootTimeoutSeconds: the later stages' VMs would not start
// within it anyway. As after a boot timeout, the data is primary on the
// target, so the target stays the active cluster, asked to run, and nothing
// restarts on the source.
func (r *Reconciler) stopOnBootPlan(ctx context.Context, s *scope, boot *srv1alpha1.BootStatus) error {
	if err := r.flipActiveCluster(ctx, s); err != nil {
		return err
	}
	stage := stoppingStage(boot)
	s.trail.Condition(srv1alpha1.ConditionTargetRunning, metav1.ConditionFalse, srv1alpha1.ReasonBootPlanStopped,
		fmt.Sprintf("the boot plan stopped at stage %s (%s)", stage.Name, stage.Phase))
	return flow.Stalled(srv1alpha1.ReasonBootPlanStopped, "%s", bootStoppedMessage(s, boot))
}

// stoppingStage is the first stage that ended without succeeding.
func stoppingStage(boot *srv1alpha1.BootStatus) srv1alpha1.BootStageStatus {
	for _, ss := range boot.Stages {
		if ss.Phase == srv1alpha1.StageTimedOut || ss.Phase == srv1alpha1.StageFailed {
			return ss
		}
	}
	return srv1alpha1.BootStageStatus{Name: "unknown", Phase: "not reported"}
}

// bootStoppedMessage says which stage did not succeed and why, which VMs
// stayed stopped and which started without passing the gate, where the group
// is left, and what the operator can do.
func bootStoppedMessage(s *scope, boot *srv1alpha1.BootStatus) string {
	stage := stoppingStage(boot)
	var b strings.Builder
	fmt.Fprintf(&b, "the boot plan of %s stopped on %s: stage %s %s", s.group.Name, s.target(), stage.Name, stage.Phase)
	if stage.Message != "" {
		fmt.Fprintf(&b, " (%s)", stage.Message)
	}
	var notStarted, ungated []string
	for _, ss := range boot.Stages {
		switch {
		case ss.Phase == srv1alpha1.StageSkipped:
			notStarted = append(notStarted, ss.VirtualMachines...)
		case ss.Name == stage.Name && ss.VMsStartTime == nil:
			// Its pre-start step failed or timed out: its VMs were never asked to run.
			notStarted = append(notStarted, ss.VirtualMachines...)
		case ss.Name == stage.Name:
			ungated = append(ungated, ss.Waiting...)
		}
	}
	if len(notStarted) > 0 {
		fmt.Fprintf(&b, "; not started, left stopped: %s", strings.Join(notStarted, ", "))
	}
	if len(ungated) > 0 {
		fmt.Fprintf(&b, "; started but did not pass the gate: %s", strings.Join(ungated, ", "))
	}
	fmt.Fprintf(&b, "; the group stays on %s, already promoted: DRBD is primary there and it is now the active cluster; the source stays stopped."+
		" Fix what stage %s waited for, then start the VMs left stopped by hand (virtctl start), or set spec.boot.onStageTimeout: Continue on the group and its later stages start",
		s.target(), stage.Name)
	return b.String()
}

// bootProgress is the stage a boot under way waits on, for the request's
// waiting message; "" without a boot or once it ended.
func bootProgress(boot *srv1alpha1.BootStatus) string {
	if boot == nil || boot.CompletionTime != nil {
		return ""
	}
	for i, ss := range boot.Stages {
		switch ss.Phase {
		case srv1alpha1.StagePreStart, srv1alpha1.StageStarting, srv1alpha1.StagePostStart:
			msg := fmt.Sprintf("boot stage %s (%d/%d) %s", ss.Name, i+1, len(boot.Stages), ss.Phase)
			if ss.Message != "" {
				msg += ": " + ss.Message
			}
			return msg
		}
	}
	return ""
}

// stageTimings splits the phase that started the group across its boot
// stages: each from its startTime to its completionTime, or to phaseEnd for
// a stage that had not ended when the phase did. A stage that never started
// (Pending, Skipped) took no time.
func stageTimings(boot *srv1alpha1.BootStatus, phaseEnd time.Time) []srv1alpha1.StageTiming {
	if boot == nil {
		return nil
	}
	out := make([]srv1alpha1.StageTiming, 0, len(boot.Stages))
	for _, ss := range boot.Stages {
		st := srv1alpha1.StageTiming{Stage: ss.Name, Phase: ss.Phase}
		if ss.StartTime != nil {
			// The stage's times are the target's clock, phaseEnd the quorum
			// cluster's: only a stage that had not ended mixes them.
			end := phaseEnd
			if ss.CompletionTime != nil {
				end = ss.CompletionTime.Time
			}
			st.Milliseconds = max(end.Sub(ss.StartTime.Time), 0).Milliseconds()
		}
		out = append(out, st)
	}
	return out
}
