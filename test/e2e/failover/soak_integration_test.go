package failover_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siterecovery/siterecovery/test/env"
)

// The soak: N planned failovers back and forth on one zone, each with a fault
// of the matrix drawn at random (seeded) in a random phase. It runs only when
// asked (make soak):
//
//	go test ./test/e2e/failover -run TestFaultSoak -v -timeout 6h -args -fault-soak.failovers=200 -fault-soak.seed=1
var (
	soakFailovers = flag.Int("fault-soak.failovers", 0, "how many faulted failovers the soak runs (0: no soak)")
	soakSeed      = flag.Uint64("fault-soak.seed", 1, "seed of the soak's draws")
	soakBudget    = flag.Duration("fault-soak.budget", 0, "start no failover after this long (0: no limit); the figures cover the failovers done")
)

// TestFaultSoak prints the failovers done, the faults injected by kind, the
// invariant violations (there must be none: the test fails otherwise) and the
// slowest recovery after a fault was healed.
func TestFaultSoak(t *testing.T) {
	if *soakFailovers <= 0 {
		t.Skip("no soak asked: -fault-soak.failovers=N")
	}
	rng := rand.New(rand.NewPCG(*soakSeed, 0x50a4))
	m := newMatrixZone(t)
	byKind := map[string]int{}
	var slowest cellResult
	start := time.Now()
	done := 0
	t.Cleanup(func() {
		kinds := make([]string, 0, len(byKind))
		for k, n := range byKind {
			kinds = append(kinds, fmt.Sprintf("%s: %d", k, n))
		}
		slices.Sort(kinds)
		t.Logf("soak seed %d: %d failovers in %s; faults injected: %s; invariant violations: %d VMs on two clusters, %d connected Primaries; slowest recovery %s (%s in %s)",
			*soakSeed, done, time.Since(start).Round(time.Second), strings.Join(kinds, ", "),
			len(m.vmis.Overlaps()), len(m.primaries.Violations()), slowest.recovery, slowest.cell.fault.Name, slowest.landed)
	})
	for done < *soakFailovers && (*soakBudget <= 0 || time.Since(start) < *soakBudget) {
		flow := flowFailover
		if m.active() == env.DR {
			flow = flowFailback
		}
		c := cell{flow: flow, fault: faults[rng.IntN(len(faults))], phase: matrixPhases[rng.IntN(len(matrixPhases))]}
		res := m.run(c)
		done++
		byKind[c.fault.Name]++
		if slowest.cell.fault == nil || res.recovery > slowest.recovery {
			slowest = res
		}
		t.Logf("soak failover %d/%d done after %s: %s, recovered %s after the heal", done, *soakFailovers, time.Since(start).Round(time.Second), c, res.recovery)
	}
}
