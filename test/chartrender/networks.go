package chartrender

import "maps"

// ReplicationNetworks is the drbdNodeAgent.replicationNetworks the tests give
// the workload chart, which renders nothing without it: the test zones'
// simulated nodes all have addresses in 10.0.0.0/8.
var ReplicationNetworks = []any{"10.0.0.0/8"}

// WithReplicationNetworks returns values with drbdNodeAgent.replicationNetworks
// set to ReplicationNetworks when chart is the workload chart and values do
// not set it (an explicit empty list stays, to test the refusal). values is
// not changed.
func WithReplicationNetworks(chart string, values map[string]any) map[string]any {
	if chart != "workload-control-plane" {
		return values
	}
	out := maps.Clone(values)
	if out == nil {
		out = map[string]any{}
	}
	agent, _ := out["drbdNodeAgent"].(map[string]any)
	if _, set := agent["replicationNetworks"]; set {
		return out
	}
	agent = maps.Clone(agent)
	if agent == nil {
		agent = map[string]any{}
	}
	agent["replicationNetworks"] = ReplicationNetworks
	out["drbdNodeAgent"] = agent
	return out
}
