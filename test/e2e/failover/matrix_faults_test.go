package failover_test

import (
	"time"

	"github.com/siterecovery/siterecovery/test/faultmatrix"
)

// faultHold is how long a fault lasts: long enough for the flow to notice it
// and say what it waits for, short against every timeout of the request. An API server is unreachable
// to quorum-manager after three failed probes a second apart.
const faultHold = 5 * time.Second

// matrixNaming bounds how much longer than faultHold a fault may last while
// the request has yet to say what it waits for.
const matrixNaming = 30 * time.Second

// faults are the failures the matrix injects. Those on the source site or its
// replication link (NeedsSource) have no cell in an unplanned flow, which has
// lost both already.
var faults = []*faultmatrix.Fault{
	faultmatrix.QuorumKilled(),
	faultmatrix.PGKilled(faultmatrix.Source),
	faultmatrix.PGKilled(faultmatrix.Target),
	faultmatrix.AgentKilled(faultmatrix.Source),
	faultmatrix.AgentKilled(faultmatrix.Target),
	faultmatrix.APIStopped(faultmatrix.Source),
	faultmatrix.APIStopped(faultmatrix.Target),
	faultmatrix.APIStopped(faultmatrix.Quorum),
	faultmatrix.LinkCut(),
	faultmatrix.APISlow(faultmatrix.Source),
	faultmatrix.APISlow(faultmatrix.Target),
	faultmatrix.APISlow(faultmatrix.Quorum),
	faultmatrix.ClockJumped(),
}
