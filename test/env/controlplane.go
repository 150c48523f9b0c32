package env

import (
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
// node of Nodes, where the tests run its drbd-node-agent, sized like a small
// production worker. The quorum cluster runs no workload and gets none.
func NodeSpecs(cluster string) []harness.NodeSpec {
	n, ok := Nodes[harnessClusters[cluster]]
	if !ok {
		return nil
	}
	return []harness.NodeSpec{{Name: n.Name, Zone: cluster + "-zone-a", CPU: "16", Memory: "64Gi", Address: n.Address}}
}
