package faultmatrix

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/test/env"
)

// Side is the cluster of a flow a fault acts on.
type Side string

// The sides of a flow: the cluster it moves from, the one it moves to, the
// quorum cluster, and the replication link between source and target.
const (
	Source Side = "source"
	Target Side = "target"
	Quorum Side = "quorum"
	Link   Side = "link"
)

// Fault is one kind of failure a matrix injects into a zone whose processes
// it started through env.Processes. Inject starts it on the cluster its side
// names; Heal ends it there, restarting what it killed as a process of top,
// the test the zone belongs to, so that it outlives the cell's subtest.
type Fault struct {
	Name   string
	Side   Side
	Inject func(t testing.TB, e *env.Env, p *env.Processes, cluster string)
	Heal   func(top testing.TB, e *env.Env, p *env.Processes, cluster string)
}

// Cluster is the cluster the fault acts on in a flow from source to target;
// none for the link between them.
func (f *Fault) Cluster(source, target string) string {
	switch f.Side {
	case Source:
		return source
	case Target:
		return target
	case Link:
		return ""
	}
	return env.Quorum
}

// NeedsSource reports whether the fault acts on the source site or its link
// to the target, both of which a flow that lost its source site has lost
// already.
func (f *Fault) NeedsSource() bool { return f.Side == Source || f.Side == Link }

// QuorumKilled stops quorum-manager; the heal starts a new one.
func QuorumKilled() *Fault {
	return &Fault{
		Name: "quorum-manager killed", Side: Quorum,
		Inject: func(t testing.TB, _ *env.Env, p *env.Processes, _ string) { p.Quorum.Stop(t) },
		Heal:   func(top testing.TB, _ *env.Env, p *env.Processes, _ string) { p.RestartQuorum(top) },
	}
}

// PGKilled stops a workload cluster's pg-controller, with the simulators that
// run in its process (KubeVirt, storage, the kubelet stand-in).
func PGKilled(side Side) *Fault {
	return &Fault{
		Name: "pg-controller killed on " + string(side), Side: side,
		Inject: func(t testing.TB, _ *env.Env, p *env.Processes, cluster string) { p.Workloads[cluster].Stop(t) },
		Heal:   func(top testing.TB, _ *env.Env, p *env.Processes, cluster string) { p.RestartWorkload(top, cluster) },
	}
}

// AgentKilled stops a workload cluster's node agent.
func AgentKilled(side Side) *Fault {
	return &Fault{
		Name: "agent killed on " + string(side), Side: side,
		Inject: func(t testing.TB, _ *env.Env, p *env.Processes, cluster string) { p.Agents[cluster].Stop(t) },
		Heal:   func(top testing.TB, _ *env.Env, p *env.Processes, cluster string) { p.RestartAgent(top, cluster) },
	}
}

// APIStopped kills a cluster's kube-apiserver; etcd, the controllers and the
// data path keep running.
func APIStopped(side Side) *Fault {
	return &Fault{
		Name: string(side) + " API server stopped", Side: side,
		Inject: func(t testing.TB, e *env.Env, _ *env.Processes, cluster string) {
			require.NoError(t, e.Clusters[cluster].StopAPIServer())
		},
		Heal: func(top testing.TB, e *env.Env, _ *env.Processes, cluster string) {
			require.NoError(top, e.Clusters[cluster].StartAPIServer())
		},
	}
}
