package env

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/quorum/setup"
)

// Processes are the controllers of a zone that a test kills and starts again
// (a fault matrix, a restart test): each one restarts as it first ran, so that
// a heal brings back the zone the test built.
type Processes struct {
	env           *Env
	Quorum        *Process
	quorumOptions setup.QuorumOptions
	// Workloads and Agents are by workload cluster.
	Workloads map[string]*Process
	Agents    map[string]*Process
	// startWorkload and startAgent start a cluster's process as it first ran.
	startWorkload map[string]func(testing.TB) *Process
	startAgent    map[string]func(testing.TB) *Process
}

// NewProcesses keeps track of the processes started through it.
func (e *Env) NewProcesses() *Processes {
	return &Processes{env: e, Workloads: map[string]*Process{}, Agents: map[string]*Process{},
		startWorkload: map[string]func(testing.TB) *Process{}, startAgent: map[string]func(testing.TB) *Process{}}
}

// StartQuorum starts quorum-manager (StartQuorum) and remembers its options.
// The process belongs to t: a restart from a subtest passes the test the zone
// belongs to, so that the process outlives the subtest.
func (p *Processes) StartQuorum(t testing.TB, o setup.QuorumOptions) *Process {
	p.quorumOptions = o
	p.Quorum = p.env.StartQuorum(t, o)
	return p.Quorum
}

// StartWorkload starts a workload cluster's pg-controller and simulators
// (StartWorkload) and remembers their options.
func (p *Processes) StartWorkload(t testing.TB, cluster string, o WorkloadOptions) *Process {
	return p.StartWorkloadWith(t, cluster, func(t testing.TB) *Process { return p.env.StartWorkload(t, cluster, o) })
}

// StartWorkloadWith starts a workload cluster's tier with start, for a zone
// whose tier is its own, and restarts it with start too.
func (p *Processes) StartWorkloadWith(t testing.TB, cluster string, start func(testing.TB) *Process) *Process {
	p.startWorkload[cluster] = start
	p.Workloads[cluster] = start(t)
	return p.Workloads[cluster]
}

// StartAgent starts a workload cluster's node agent (StartAgent).
func (p *Processes) StartAgent(t testing.TB, cluster string) *Process {
	return p.StartAgentWith(t, cluster, func(t testing.TB) *Process { return p.env.StartAgent(t, cluster) })
}

// StartAgentWith starts a workload cluster's node agent with start, and
// restarts it with start too.
func (p *Processes) StartAgentWith(t testing.TB, cluster string, start func(testing.TB) *Process) *Process {
	p.startAgent[cluster] = start
	p.Agents[cluster] = start(t)
	return p.Agents[cluster]
}

// RestartQuorum starts quorum-manager again, as it first ran.
func (p *Processes) RestartQuorum(t testing.TB) { p.StartQuorum(t, p.quorumOptions) }

// RestartWorkload starts a workload cluster's pg-controller again, as it first ran.
func (p *Processes) RestartWorkload(t testing.TB, cluster string) {
	p.Workloads[cluster] = p.startWorkload[cluster](t)
}

// RestartAgent starts a workload cluster's node agent again, as it first ran.
func (p *Processes) RestartAgent(t testing.TB, cluster string) {
	p.Agents[cluster] = p.startAgent[cluster](t)
}

// QuorumClock is the stepped clock quorum-manager runs on; the test fails
// when it was started on another.
func (p *Processes) QuorumClock(t testing.TB) *SteppedClock {
	c, ok := p.quorumOptions.Clock.(*SteppedClock)
	require.True(t, ok, "quorum-manager does not run on a SteppedClock (setup.QuorumOptions.Clock)")
	return c
}
