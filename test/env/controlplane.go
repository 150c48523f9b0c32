package env

import (
	"strings"
	"time"

	"github.com/siterecovery/siterecovery/test/harness"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
)

// A zone with Options.ControlPlane runs the harness's full control plane on
// every cluster: kube-controller-manager (PV binder, pvc-protection, garbage
// collector, Job and ServiceAccount controllers), kube-scheduler and kwok
// playing the nodes, with the admission plugins of a kubeadm cluster plus
// OwnerReferencesPermissionEnforcement and PodSecurity. VMIs then run in
// virt-launcher pods that the scheduler places and kwok runs. Without it a
// cluster is a bare API server with kube-scheduler alone, and nodes that this
// package registers itself (createNodes).

// ControlPlane reports whether the zone's clusters run the full control plane
// (Options.ControlPlane): the simulators a test wires itself follow it, with
// KubeVirtOptions.
func (e *Env) ControlPlane() bool { return e.controlPlane }

// KubeVirtOptions are the KubeVirt simulator's options for a workload cluster
// of the zone with the given delays: on the full control plane VMIs run in
// launcher pods on kwok's nodes, on a bare API server at once on the
// cluster's node.
func (e *Env) KubeVirtOptions(cluster string, start, stop time.Duration) kubevirtsim.Options {
	return kubevirtsim.Options{StartDelay: start, StopDelay: stop, NodeName: Nodes[cluster].Name, LauncherPods: e.controlPlane}
}

// harnessClusters maps the harness's cluster names to this package's.
var harnessClusters = map[string]string{"quorum": Quorum, "primary": Primary, "dr": DR}

// NodeSpecs are the nodes kwok plays in a cluster of a ControlPlane zone, by
// the harness's cluster name (harness.Options.Nodes): each workload cluster's
// WorkerNodes, two in zone a and one in zone b, each with the allocatable
// CPU and memory of a small production worker (16 CPUs and 64 GiB less the
// kubelet's and system reservations). The quorum cluster runs no workload and
// gets none.
func NodeSpecs(cluster string) []harness.NodeSpec {
	name := harnessClusters[cluster]
	if _, ok := Nodes[name]; !ok {
		return nil
	}
	var specs []harness.NodeSpec
	for i, n := range workers(name) {
		zone := cluster + "-zone-a"
		if i == 2 {
			zone = cluster + "-zone-b"
		}
		specs = append(specs, harness.NodeSpec{Name: n.Name, Zone: zone, CPU: "15500m", Memory: "62Gi", Address: n.Address})
	}
	return specs
}

// WorkerNodes are the nodes of a workload cluster of the zone, each running
// a drbd-node-agent (StartAgent): on a full control plane the three kwok
// plays (NodeSpecs), where the scheduler places the replica holders and the
// launcher pods, else the cluster's one node of Nodes.
func (e *Env) WorkerNodes(cluster string) []Node {
	if !e.controlPlane {
		return []Node{Nodes[cluster]}
	}
	return workers(cluster)
}

// ControlPlaneNodes are a workload cluster's nodes on a full control plane
// (NodeSpecs), for a test that starts its clusters itself.
func ControlPlaneNodes(cluster string) []Node { return workers(cluster) }

// workers are a workload cluster's three nodes on a full control plane: its
// node of Nodes first, then "-worker-2" and "-worker-3" on the next addresses.
func workers(cluster string) []Node {
	first := Nodes[cluster]
	prefix := strings.TrimSuffix(first.Name, "1")
	base := strings.TrimSuffix(first.Address, "1")
	return []Node{first, {prefix + "2", base + "2"}, {prefix + "3", base + "3"}}
}
