package env

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/siterecovery/siterecovery/internal/nodeagent"
	"github.com/siterecovery/siterecovery/test/harness"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
)

// Node is a simulated worker node: its name and replication address.
type Node struct{ Name, Address string }

// Nodes holds the first simulated worker node of each workload cluster: a
// bare API server's only one, where the fixtures put their replicas
// (DRBDReplica). A full control plane has two more (WorkerNodes).
var Nodes = map[string]Node{
	Primary: {"primary-worker-1", "10.0.0.1"},
	DR:      {"dr-worker-1", "10.0.1.1"},
}

// ReplicationNetworks are the replication networks of the test zones' agents:
// every simulated node's address lies in 10.0.0.0/8.
var ReplicationNetworks = nodeagent.Networks{netip.MustParsePrefix("10.0.0.0/8")}

// drbdNetwork is the simulated DRBD kernel state shared by every node of a zone.
type drbdNetwork struct {
	stateDir       string
	drbdadm, setup string
	fabric         *drbdsim.Fabric
}

// DRBD returns the zone's simulated DRBD network, building the simulator once.
func (e *Env) DRBD(t testing.TB) *drbdsim.Fabric {
	e.drbdNet(t)
	return e.drbd.fabric
}

func (e *Env) drbdNet(t testing.TB) *drbdNetwork {
	if e.drbd == nil {
		dir := t.TempDir()
		state := filepath.Join(dir, "state")
		require.NoError(t, os.MkdirAll(state, 0o755))
		// Every node of a zone runs the simulator in this process (StartAgent).
		drbdsim.UseMemory(t, state)
		e.drbd = &drbdNetwork{stateDir: state, drbdadm: "drbdadm", setup: "drbdsetup", fabric: &drbdsim.Fabric{StateDir: state}}
	}
	return e.drbd
}

// createNodes adds each workload cluster's simulated worker node; on the
// full control plane kwok plays it (NodeSpecs).
func (e *Env) createNodes(t testing.TB) {
	if e.controlPlane {
		return
	}
	for cluster, n := range Nodes {
		create(t, e.Client(cluster), simulatedNode(n.Name, n.Address))
	}
}

// simulatedNode is a worker Node as its kubelet registers it: Ready, with
// its address and capacity, which kube-scheduler needs to place pods on it.
func simulatedNode(name, address string) *corev1.Node {
	capacity := harness.NodeCapacity("16", "64Gi")
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: address}},
			Capacity:    capacity,
			Allocatable: capacity,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// StartAgent runs the drbd-node-agent of each of a workload cluster's nodes
// (WorkerNodes) against the DRBD simulator, as the agent's DaemonSet does;
// stopping the returned process stops them all.
func (e *Env) StartAgent(t testing.TB, cluster string) *Process {
	var agents []*Process
	for _, n := range e.WorkerNodes(cluster) {
		agents = append(agents, e.StartAgentOn(t, cluster, n.Name, n.Address))
	}
	return Together(agents...)
}

// AddNode creates another simulated worker node on a workload cluster, for
// StartAgentOn.
func (e *Env) AddNode(t testing.TB, cluster, name, address string) {
	create(t, e.Client(cluster), simulatedNode(name, address))
}

// StartAgentOn runs the drbd-node-agent of the named node of a workload
// cluster (its Node created by AddNode) against the DRBD simulator.
func (e *Env) StartAgentOn(t testing.TB, cluster, name, address string) *Process {
	net := e.drbdNet(t)
	n := Node{name, address}
	cfg := nodeagent.Config{
		NodeName:           n.Name,
		Hostname:           n.Name,
		ReplicationAddress: n.Address,
		ResourceDir:        filepath.Join(filepath.Dir(net.stateDir), "etc-"+n.Name),
		DrbdadmPath:        net.drbdadm,
		DrbdsetupPath:      net.setup,
		// The simulator runs in this process: no fork per drbdadm call, so tests
		// and benchmarks measure the agent and the controllers.
		Exec:    drbdsim.Executor{StateDir: net.stateDir, Node: n.Name},
		Devices: SimDevices{},
		// Every simulated node's address lies in it.
		ReplicationNetworks: ReplicationNetworks,
		StatusInterval:      50 * time.Millisecond,
		// A silent agent is seen within four intervals.
		HeartbeatInterval: time.Second,
	}
	// Its cache holds its own node's replicas, as the binary's does.
	return e.Manager(t, cluster, "drbd-node-agent", ctrl.Options{Cache: cache.Options{ByObject: nodeagent.CacheByObject(n.Name)}},
		func(mgr ctrl.Manager) error { return nodeagent.Setup(mgr, cfg) })
}
