// Command stages prints the kwok Stages the test clusters' nodes follow, as one
// YAML stream for kwok's --config: kwok's own "fast" node and pod stages with
// the node heartbeat that renews the node Lease, the set kwokctl configures for
// its clusters (sigs.k8s.io/kwok pkg/kwokctl/runtime/cluster.go,
// getDefaultNodeStages and getDefaultPodStages). Taking them from the module
// keeps them the version of the kwok binary built beside them.
package main

import (
	"fmt"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	docs := []string{
		nodefast.DefaultNodeInit,
		nodeheartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	for i, d := range docs {
		docs[i] = strings.TrimSpace(d)
	}
	fmt.Println(strings.Join(docs, "\n---\n"))
}
