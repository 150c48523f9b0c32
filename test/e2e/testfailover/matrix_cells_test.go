package testfailover_test

import (
	"fmt"
	"slices"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
)

// The test failover fault matrix: every fault × every phase of a TestFailover
// it can land in. make testfailover-fault-matrix runs all of its cells; make
// test runs ciCells of them, picked by the seeded rotation of
// test/faultmatrix:
//
//	go test ./test/e2e/testfailover -run TestTestFailoverFaultMatrix -args -fault-matrix.seed=14
//
// The source is the primary cluster, where production runs; the target the DR
// cluster, where the test copies boot.
const ciCells = 2

// faults are the failures injected. The agent on the target keeps the DR
// replica Secondary, which a test failover must not need. The DRBD link
// applies too: a test failover reads the DR replicas' disk state only before
// it requests their snapshots (all UpToDate here when the fault lands: the
// test is already in Snapshotting), and snapshots the DR backing PVC that DRBD
// replicates into, so a cut link leaves that volume behind production, still
// a crash-consistent copy to boot, and the test must succeed without ever
// touching the replication it runs beside.
var faults = []*faultmatrix.Fault{
	faultmatrix.QuorumKilled(),
	faultmatrix.PGKilled(faultmatrix.Source),
	faultmatrix.PGKilled(faultmatrix.Target),
	faultmatrix.AgentKilled(faultmatrix.Target),
	faultmatrix.APIStopped(faultmatrix.Source),
	faultmatrix.APIStopped(faultmatrix.Target),
	faultmatrix.APIStopped(faultmatrix.Quorum),
	faultmatrix.APISlow(faultmatrix.Source),
	faultmatrix.APISlow(faultmatrix.Target),
	faultmatrix.APISlow(faultmatrix.Quorum),
	faultmatrix.ClockJumped(),
	faultmatrix.LinkCut(),
}

// matrixPhases are the phases a fault lands in, the moment the test is seen
// entering one (Pending only validates and passes at once).
var matrixPhases = []srv1alpha1.TestFailoverPhase{
	srv1alpha1.TestFailoverSnapshotting, srv1alpha1.TestFailoverRestoring, srv1alpha1.TestFailoverBooting,
	srv1alpha1.TestFailoverVerifying, srv1alpha1.TestFailoverCleaningUp,
}

// cell is one run of the matrix.
type cell struct {
	fault *faultmatrix.Fault
	phase srv1alpha1.TestFailoverPhase
}

func (c cell) String() string { return fmt.Sprintf("test failover/%s/%s", c.fault.Name, c.phase) }

func allCells() []cell {
	var out []cell
	for _, f := range faults {
		for _, p := range matrixPhases {
			out = append(out, cell{fault: f, phase: p})
		}
	}
	return out
}

// phaseIndex orders the phases of a TestFailover, to tell whether a test went
// past the phase a fault was to land in; a terminal phase is past them all.
func phaseIndex(p srv1alpha1.TestFailoverPhase) int {
	if i := slices.Index(fullTrail, string(p)); i >= 0 {
		return i
	}
	if p == "" {
		return -1
	}
	return len(fullTrail)
}
