package env

import (
	"testing"

	"github.com/siterecovery/siterecovery/internal/quorum/setup"
)

// Processes are the controllers of a zone that a test kills and starts again
// (a fault matrix, a restart test): each one restarts with the options it
// first ran with, so that a heal brings back the zone the test built.
type Processes struct {
	env           *Env
	Quorum        *Process
	quorumOptions setup.QuorumOptions
	// Workloads and Agents are by workload cluster.
	Workloads       map[string]*Process
	workloadOptions map[string]WorkloadOptions
	Agents          map[string]*Process
}

// NewProcesses keeps track of the processes started through it.
func (e *Env) NewProcesses() *Processes {
	return &Processes{env: e, Workloads: map[string]*Process{}, workloadOptions: map[string]WorkloadOptions{}, Agents: map[string]*Process{}}
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
	p.workloadOptions[cluster] = o
	p.Workloads[cluster] = p.env.StartWorkload(t, cluster, o)
	return p.Workloads[cluster]
}

// StartAgent starts a workload cluster's node agent (StartAgent).
func (p *Processes) StartAgent(t testing.TB, cluster string) *Process {
	p.Agents[cluster] = p.env.StartAgent(t, cluster)
	return p.Agents[cluster]
}

// RestartQuorum starts quorum-manager again, as it first ran.
func (p *Processes) RestartQuorum(t testing.TB) { p.StartQuorum(t, p.quorumOptions) }

// RestartWorkload starts a workload cluster's pg-controller again, as it first ran.
func (p *Processes) RestartWorkload(t testing.TB, cluster string) {
	p.StartWorkload(t, cluster, p.workloadOptions[cluster])
}
