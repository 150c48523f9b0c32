package v1alpha1

// The drbd-node-agent of each node renews a coordination Lease,
// AgentHeartbeatNamespace/AgentHeartbeatName(node), as its heartbeat: one
// write per renewal, whatever the number of resources on the node. A failover
// that needs a node's DRBD reads it to tell a silent agent from a slow DRBD.
const (
	// AgentHeartbeatNamespace is where the agents' Leases live, beside the
	// kubelets' own node Leases.
	AgentHeartbeatNamespace = "kube-node-lease"
	// AgentHeartbeatPrefix prefixes a node's agent Lease; use AgentHeartbeatName.
	AgentHeartbeatPrefix = "siterecovery-agent-"
)

// AgentHeartbeatName is the name of the Lease the agent of node renews.
func AgentHeartbeatName(node string) string { return AgentHeartbeatPrefix + node }
