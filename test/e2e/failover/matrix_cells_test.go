package failover_test

import (
	"fmt"
	"slices"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
)

// The fault matrix: every flow × every fault × every phase the fault can land
// in. make fault-matrix runs all of its cells; make test runs a slice of
// them (ciCells), picked by the seeded rotation of faultmatrix.Pick, which
// changes every day unless SITERECOVERY_FAULT_MATRIX_SEED pins it, and prints
// which ran and the seed that reproduces them:
//
//	go test ./test/e2e/failover -run TestFaultMatrix -args -fault-matrix.seed=20423
//
// ciCells is how many cells that slice holds (-fault-matrix.cells changes it).
const ciCells = 4

// flowKind is a user flow the matrix runs.
type flowKind string

const (
	flowFailover  flowKind = "planned failover"
	flowFailback  flowKind = "failback"
	flowUnplanned flowKind = "unplanned failover"
)

var matrixFlows = []flowKind{flowFailover, flowFailback, flowUnplanned}

// matrixPhases are the phases a fault is injected in: it lands the moment the
// request is seen entering the phase.
var matrixPhases = []srv1alpha1.FailoverPhase{
	srv1alpha1.FailoverStoppingOnSource, srv1alpha1.FailoverWaitingForDRBD, srv1alpha1.FailoverStartingOnTarget,
}

// cell is one run of the matrix.
type cell struct {
	flow  flowKind
	fault *faultmatrix.Fault
	phase srv1alpha1.FailoverPhase
}

func (c cell) String() string { return fmt.Sprintf("%s/%s/%s", c.flow, c.fault.Name, c.phase) }

// allCells lists the matrix in a fixed order.
func allCells() []cell {
	var out []cell
	for _, f := range matrixFlows {
		for _, ft := range faults {
			if f == flowUnplanned && ft.NeedsSource() {
				continue // the source site is gone in an unplanned flow
			}
			for _, p := range matrixPhases {
				out = append(out, cell{flow: f, fault: ft, phase: p})
			}
		}
	}
	return out
}

// zonePlans splits cells into the runs of one zone each: an unplanned flow
// loses its source site for good, so it is the last cell of its zone; the
// planned cells are shared out before them.
func zonePlans(cells []cell) [][]cell {
	var planned, unplanned []cell
	for _, c := range cells {
		if c.flow == flowUnplanned {
			unplanned = append(unplanned, c)
		} else {
			planned = append(planned, c)
		}
	}
	n := max(1, len(unplanned))
	plans := make([][]cell, n)
	for i, c := range planned {
		plans[i%n] = append(plans[i%n], c)
	}
	for i := range plans {
		plans[i] = alternate(plans[i])
		if i < len(unplanned) {
			plans[i] = append(plans[i], unplanned[i])
		}
	}
	return plans
}

// alternate orders planned cells so that failovers and failbacks take turns
// where they can: each cell then starts where the previous one left the group.
func alternate(cells []cell) []cell {
	out := make([]cell, 0, len(cells))
	next := flowFailover
	for len(cells) > 0 {
		i := slices.IndexFunc(cells, func(c cell) bool { return c.flow == next })
		if i < 0 {
			i = 0
		}
		out = append(out, cells[i])
		cells = slices.Delete(cells, i, i+1)
		if out[len(out)-1].flow == flowFailover {
			next = flowFailback
		} else {
			next = flowFailover
		}
	}
	return out
}
