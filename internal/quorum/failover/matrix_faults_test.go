package failover_test

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/test/env"
)

// fault is one kind of failure the matrix injects. inject starts it on the
// zone of a request moving from source to target; heal ends it, so that the
// flow can finish. The fault lasts faultHold in between.
type fault struct {
	name string
	// needsSource: the fault acts on the source site, which an unplanned
	// flow has lost already.
	needsSource bool
	inject      func(m *matrixZone, source, target string)
	heal        func(m *matrixZone, source, target string)
}

// faultHold is how long a fault lasts: long enough for the flow to notice it
// and say what it waits for, short against every timeout of the request. An API server is unreachable
// to quorum-manager after three failed probes a second apart.
const faultHold = 5 * time.Second

// matrixNaming bounds how much longer than faultHold a fault may last while
// the request has yet to say what it waits for.
const matrixNaming = 30 * time.Second

var faults = []*fault{
	{
		name:   "quorum-manager killed",
		inject: func(m *matrixZone, _, _ string) { m.quorum.Stop(m.t) },
		heal: func(m *matrixZone, _, _ string) {
			m.quorum = m.StartQuorum(m.t, m.options.quorumOptions())
		},
	},
	{
		name: "pg-controller killed on source", needsSource: true,
		inject: func(m *matrixZone, source, _ string) { m.pg[source].Stop(m.t) },
		heal:   func(m *matrixZone, source, _ string) { m.startPG(source) },
	},
	{
		name:   "pg-controller killed on target",
		inject: func(m *matrixZone, _, target string) { m.pg[target].Stop(m.t) },
		heal:   func(m *matrixZone, _, target string) { m.startPG(target) },
	},
	{
		name: "agent killed on source", needsSource: true,
		inject: func(m *matrixZone, source, _ string) { m.agent[source].Stop(m.t) },
		heal:   func(m *matrixZone, source, _ string) { m.agent[source] = m.StartAgent(m.t, source) },
	},
	{
		name:   "agent killed on target",
		inject: func(m *matrixZone, _, target string) { m.agent[target].Stop(m.t) },
		heal:   func(m *matrixZone, _, target string) { m.agent[target] = m.StartAgent(m.t, target) },
	},
	{
		name: "source API server stopped", needsSource: true,
		inject: func(m *matrixZone, source, _ string) { require.NoError(m.t, m.Clusters[source].StopAPIServer()) },
		heal:   func(m *matrixZone, source, _ string) { require.NoError(m.t, m.Clusters[source].StartAPIServer()) },
	},
	{
		name:   "target API server stopped",
		inject: func(m *matrixZone, _, target string) { require.NoError(m.t, m.Clusters[target].StopAPIServer()) },
		heal:   func(m *matrixZone, _, target string) { require.NoError(m.t, m.Clusters[target].StartAPIServer()) },
	},
	{
		name:   "quorum API server stopped",
		inject: func(m *matrixZone, _, _ string) { require.NoError(m.t, m.Clusters[env.Quorum].StopAPIServer()) },
		heal:   func(m *matrixZone, _, _ string) { require.NoError(m.t, m.Clusters[env.Quorum].StartAPIServer()) },
	},
	{
		name: "DRBD link cut", needsSource: true,
		inject: func(m *matrixZone, _, _ string) { m.setLinks(false) },
		heal:   func(m *matrixZone, _, _ string) { m.setLinks(true) },
	},
	slow("source", true, func(source, _ string) string { return source }),
	slow("target", false, func(_, target string) string { return target }),
	slow("quorum", false, func(_, _ string) string { return env.Quorum }),
	{
		name:   "quorum-manager clock jumped",
		inject: func(m *matrixZone, _, _ string) { m.clock.Step(clockJump) },
		heal:   func(m *matrixZone, _, _ string) { m.clock.Step(-clockJump) },
	},
}

// slowAPIServer is the delay a slow API server adds to each direction
// between it and quorum-manager: a round trip of 600 ms, well under the
// workload clusters' 2 s client timeout, so that every call is slow and
// none fails for it alone.
const slowAPIServer = 300 * time.Millisecond

// clockJump is how far quorum-manager's clock steps forward, and back at
// the heal: more than the failover Lease's renewal interval, so that the
// holder renews it on the jumped clock, and less than the Lease's duration
// and every timeout of the request, so that neither a takeover nor a
// timeout is due.
const clockJump = 90 * time.Second

// slow is the fault of one API server answering quorum-manager slowly
// (env.LatencyProxy).
func slow(which string, needsSource bool, cluster func(source, target string) string) *fault {
	return &fault{
		name: which + " API server slow", needsSource: needsSource,
		inject: func(m *matrixZone, source, target string) {
			m.Latency[cluster(source, target)].SetDelay(slowAPIServer)
		},
		heal: func(m *matrixZone, source, target string) { m.Latency[cluster(source, target)].SetDelay(0) },
	}
}

// setLinks cuts or restores the replication link of every VM of the group.
func (m *matrixZone) setLinks(up bool) {
	fabric := m.DRBD(m.t)
	for _, vm := range m.vms {
		if up {
			require.NoError(m.t, fabric.Connect(drbdName(vm)))
		} else {
			require.NoError(m.t, fabric.Disconnect(drbdName(vm)))
		}
	}
}
