package protection_test

import (
	"testing"
	"time"

	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
)

// faultHold is how long a fault lasts: long enough for the flow to notice it
// and say what it waits for (an API server is unreachable to quorum-manager
// after three failed probes, 200 ms apart here), short against the request's
// timeouts.
const faultHold = 5 * time.Second

// faults are the failures the matrix injects. The source is the primary
// cluster, where the VM runs; the target is the DR cluster.
var faults = []*faultmatrix.Fault{
	faultmatrix.QuorumKilled(),
	faultmatrix.PGKilled(faultmatrix.Source),
	faultmatrix.PGKilled(faultmatrix.Target),
	faultmatrix.AgentKilled(faultmatrix.Source),
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

// newMatrixZone starts a zone with what the faults need: a latency proxy in
// front of each API server, and quorum-manager on a clock a fault jumps.
func newMatrixZone(t testing.TB) *zone {
	q := quorumOptions
	q.Clock = &env.SteppedClock{}
	return newZoneWith(t, env.Options{Latency: true}, q)
}
