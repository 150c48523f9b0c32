package protection_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/test/env"
)

// fault is one kind of failure the matrix injects into a zone. The source is
// the primary cluster, where the VM runs; the target is the DR cluster. top is
// the test the restarted processes belong to, so that they outlive a cell.
type fault struct {
	name   string
	inject func(z *zone, t testing.TB)
	heal   func(z *zone, top testing.TB)
}

// faultHold is how long a fault lasts: long enough for the flow to notice it
// and say what it waits for (an API server is unreachable to quorum-manager
// after three failed probes, 200 ms apart here), short against the request's
// timeouts.
const faultHold = 5 * time.Second

var faults = []*fault{
	{
		name:   "quorum-manager killed",
		inject: func(z *zone, t testing.TB) { z.quorum.Stop(t) },
		heal:   func(z *zone, top testing.TB) { z.quorum = z.StartQuorum(top, quorumOptions) },
	},
	pgKilled("source", env.Primary),
	pgKilled("target", env.DR),
	agentKilled("source", env.Primary),
	agentKilled("target", env.DR),
	apiStopped("source", env.Primary),
	apiStopped("target", env.DR),
	apiStopped("quorum", env.Quorum),
}

// pgKilled stops a workload cluster's pg-controller, with the simulators that
// run in its process (KubeVirt, storage, the kubelet stand-in).
func pgKilled(side, cluster string) *fault {
	return &fault{
		name:   "pg-controller killed on " + side,
		inject: func(z *zone, t testing.TB) { z.workloads[cluster].Stop(t) },
		heal:   func(z *zone, top testing.TB) { z.startWorkload(top, cluster) },
	}
}

func agentKilled(side, cluster string) *fault {
	return &fault{
		name:   "agent killed on " + side,
		inject: func(z *zone, t testing.TB) { z.agents[cluster].Stop(t) },
		heal:   func(z *zone, top testing.TB) { z.startAgent(top, cluster) },
	}
}

// apiStopped kills a cluster's kube-apiserver; etcd, the controllers and the
// DRBD data path keep running.
func apiStopped(side, cluster string) *fault {
	return &fault{
		name:   side + " API server stopped",
		inject: func(z *zone, t testing.TB) { require.NoError(t, z.Clusters[cluster].StopAPIServer()) },
		heal:   func(z *zone, top testing.TB) { require.NoError(top, z.Clusters[cluster].StartAPIServer()) },
	}
}
