package drpc_test

import (
	"fmt"
	"slices"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
)

// The DRPC fault matrix of the Offloaded backend: a DRPC's Relocate and
// Failover × every fault × every progression step the fault can land in.
// make drpc-fault-matrix runs all of its cells; make test runs ciCells of
// them, picked by the seeded rotation of test/faultmatrix:
//
//	go test ./test/e2e/drpc -run TestDRPCFaultMatrix -args -fault-matrix.seed=14
const ciCells = 2

// validated says which cells make test draws from: the Relocate cells, each
// of whose faults has been seen to pass. A Failover cell waits on a finding:
// the safety recorder saw the application's VMI start on the new primary
// while the global VGR there was asked to be Primary but did not report it
// yet; make drpc-fault-matrix runs them all.
func validated(c cell) bool { return c.action == drv1alpha1.ActionRelocate }

// faults are the failures injected. The Offloaded backend has no node agent
// and no DRBD link: the arrays replicate on their own.
var faults = []*faultmatrix.Fault{
	faultmatrix.QuorumKilled(),
	faultmatrix.PGKilled(faultmatrix.Source),
	faultmatrix.PGKilled(faultmatrix.Target),
	faultmatrix.APIStopped(faultmatrix.Source),
	faultmatrix.APIStopped(faultmatrix.Target),
	faultmatrix.APIStopped(faultmatrix.Quorum),
	faultmatrix.APISlow(faultmatrix.Source),
	faultmatrix.APISlow(faultmatrix.Target),
	faultmatrix.APISlow(faultmatrix.Quorum),
	faultmatrix.ClockJumped(),
}

// steps are the progressions of each action, in order.
var steps = map[drv1alpha1.DRAction][]drv1alpha1.ProgressionStatus{
	drv1alpha1.ActionRelocate: {drv1alpha1.ProgressionPreparingFinalSync, drv1alpha1.ProgressionEnsuringVolumesAreSecondary,
		drv1alpha1.ProgressionWaitForReadiness, drv1alpha1.ProgressionUpdatedPlacement},
	drv1alpha1.ActionFailover: {drv1alpha1.ProgressionFailingOverToCluster, drv1alpha1.ProgressionUpdatedPlacement,
		drv1alpha1.ProgressionCleaningUp},
}

// cell is one run of the matrix.
type cell struct {
	action drv1alpha1.DRAction
	fault  *faultmatrix.Fault
	step   drv1alpha1.ProgressionStatus
}

func (c cell) String() string { return fmt.Sprintf("%s/%s/%s", c.action, c.fault.Name, c.step) }

func allCells() []cell {
	var out []cell
	for _, a := range []drv1alpha1.DRAction{drv1alpha1.ActionRelocate, drv1alpha1.ActionFailover} {
		for _, f := range faults {
			for _, s := range steps[a] {
				out = append(out, cell{action: a, fault: f, step: s})
			}
		}
	}
	return out
}

// reached reports whether a DRPC in an action is at step or past it.
func (c cell) reached(d *drv1alpha1.DRPlacementControl, to string) bool {
	if d.Status.PreferredDecision.ClusterName == to && d.Status.Phase != drv1alpha1.DRStateInitiating &&
		(d.Status.Phase == drv1alpha1.DRStateRelocated || d.Status.Phase == drv1alpha1.DRStateFailedOver) {
		return c.step == drv1alpha1.ProgressionCleaningUp || d.Status.Progression == drv1alpha1.ProgressionCompleted ||
			slices.Index(steps[c.action], d.Status.Progression) >= slices.Index(steps[c.action], c.step)
	}
	i := slices.Index(steps[c.action], d.Status.Progression)
	return i >= 0 && i >= slices.Index(steps[c.action], c.step)
}
