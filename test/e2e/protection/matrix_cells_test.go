package protection_test

import (
	"fmt"
	"slices"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
)

// The protection fault matrix: every fault × every step of protect and
// unprotect it can land in. make protection-fault-matrix runs all of its
// cells; make test runs ciCells of them, picked by the seeded rotation of
// test/faultmatrix.

// step is where a fault lands: a protect phase, the moment the request is seen
// entering it, or a point of the removal.
type step struct {
	name string
	// phase, for a protect step.
	phase srv1alpha1.ProtectionPhase
}

func (s step) unprotect() bool { return s.phase == "" }

var (
	stepJustDeleted = step{name: "just deleted"}
	stepLeftGroup   = step{name: "VM left its group"}
	stepRemoving    = step{name: "removing replication"}
)

var matrixSteps = []step{
	{name: string(srv1alpha1.ProtectionProvisioningTarget), phase: srv1alpha1.ProtectionProvisioningTarget},
	{name: string(srv1alpha1.ProtectionCreatingReplication), phase: srv1alpha1.ProtectionCreatingReplication},
	{name: string(srv1alpha1.ProtectionWaitingForInitialSync), phase: srv1alpha1.ProtectionWaitingForInitialSync},
	{name: string(srv1alpha1.ProtectionSwitchingFrontend), phase: srv1alpha1.ProtectionSwitchingFrontend},
	stepJustDeleted, stepLeftGroup, stepRemoving,
}

// cell is one run of the matrix.
type cell struct {
	fault *faultmatrix.Fault
	step  step
}

func (c cell) String() string {
	flow := "protect"
	if c.step.unprotect() {
		flow = "unprotect"
	}
	return fmt.Sprintf("%s/%s/%s", flow, c.fault.Name, c.step.name)
}

func allCells() []cell {
	var out []cell
	for _, f := range faults {
		for _, s := range matrixSteps {
			out = append(out, cell{fault: f, step: s})
		}
	}
	return out
}

// ciCells is how many cells make test runs.
const ciCells = 3

// protectTrail is the order of the protect phases, to tell whether a request
// went past the phase a fault was to land in.
var protectTrail = []srv1alpha1.ProtectionPhase{
	"", srv1alpha1.ProtectionPending, srv1alpha1.ProtectionValidating, srv1alpha1.ProtectionProvisioningTarget,
	srv1alpha1.ProtectionCreatingReplication, srv1alpha1.ProtectionSwitchingFrontend, srv1alpha1.ProtectionWaitingForInitialSync,
	srv1alpha1.ProtectionAddingToGroup, srv1alpha1.ProtectionProtected,
}

func phaseIndex(p srv1alpha1.ProtectionPhase) int {
	if i := slices.Index(protectTrail, p); i >= 0 {
		return i
	}
	return len(protectTrail) // Failed
}
