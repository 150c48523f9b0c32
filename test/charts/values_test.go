package charts

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/test/chartrender"
)

// TestChartsRejectBadValues renders each chart with a value a user could get
// wrong, and expects the error that names it, instead of pods that crash-loop
// or managers that all act at once.
func TestChartsRejectBadValues(t *testing.T) {
	for _, tc := range []struct {
		name, chart string
		values      map[string]any
		want        string
	}{
		{"replicas without leader election", "quorum-control-plane", map[string]any{"replicas": 3, "leaderElection": false}, "leaderElection"},
		{"unknown log level", "quorum-control-plane", map[string]any{"logLevel": "warn"}, "logLevel"},
		{"port as a string", "quorum-control-plane", map[string]any{"probePort": "8081"}, "probePort"},
		{"port out of range", "quorum-control-plane", map[string]any{"metrics": map[string]any{"port": 70000}}, "port"},
		{"one port twice", "quorum-control-plane", map[string]any{"probePort": 8080}, "metrics.port and probePort must differ"},
		{"fractional replicas", "workload-control-plane", map[string]any{"pgController": map[string]any{"replicas": 1.5}}, "replicas"},
		{"agent log level", "workload-control-plane", map[string]any{"drbdNodeAgent": map[string]any{"logLevel": "warning"}}, "logLevel"},
		// A security control has no permissive default: no list, no agent.
		{"no replication networks", "workload-control-plane", map[string]any{"drbdNodeAgent": map[string]any{"replicationNetworks": []any{}}}, "drbdNodeAgent.replicationNetworks is empty"},
		{"replication network not a CIDR", "workload-control-plane", map[string]any{"drbdNodeAgent": map[string]any{"replicationNetworks": []any{"10.0.0.1"}}}, "replicationNetworks"},
		{"agent ports equal", "workload-control-plane", map[string]any{"drbdNodeAgent": map[string]any{"probePort": 9942}}, "drbdNodeAgent.metricsPort and drbdNodeAgent.probePort must differ"},
		{"pg-controller ports equal", "workload-control-plane", map[string]any{"pgController": map[string]any{"probePort": 8080}}, "pgController.metricsPort and pgController.probePort must differ"},
		{"DR namespace not a name", "workload-control-plane", map[string]any{"quorumAccess": map[string]any{"drNamespaces": []any{"DR_Production"}}}, "drNamespaces"},
		{"pull policy", "workload-control-plane", map[string]any{"pgController": map[string]any{"image": map[string]any{"pullPolicy": "always"}}}, "pullPolicy"},
		{"digest without its algorithm", "quorum-control-plane", map[string]any{"image": map[string]any{"digest": "0123abcd"}}, "digest"},
		{"agent digest too short", "workload-control-plane", map[string]any{"drbdNodeAgent": map[string]any{"image": map[string]any{"digest": "sha256:abc"}}}, "digest"},
		{"scrape interval without a unit", "workload-control-plane", map[string]any{"monitoring": map[string]any{"serviceMonitor": map[string]any{"interval": "30"}}}, "interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := renderErr(t, tc.chart, tc.values)
			require.Error(t, err)
			require.ErrorContains(t, err, tc.want)
			t.Log(err)
		})
	}
	// Good values stay accepted: one replica may run without leader election.
	require.NoError(t, renderErr(t, "quorum-control-plane", map[string]any{"replicas": 1, "leaderElection": false}))
}

func renderErr(t *testing.T, dir string, values map[string]any) error {
	t.Helper()
	_, err := chartrender.RenderValues(dir, "dr-production", values)
	return err
}
