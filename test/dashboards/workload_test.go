package dashboards

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/siterecovery/siterecovery/internal/nodeagent"
	"github.com/siterecovery/siterecovery/test/chartrender"
)

// TestWorkloadDashboardNamesAgentMetrics renders the workload chart's
// dashboard and loads each panel and variable query into Prometheus's
// parser: each parses and names only metrics drbd-node-agent registers.
// The dashboard's uid and title carry the release's namespace, and it goes
// with the agent: no agent, no dashboard.
func TestWorkloadDashboardNamesAgentMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Prometheus's PromQL parser (tools/promql)")
	}
	reg := prometheus.NewRegistry()
	require.NoError(t, nodeagent.RegisterFigures(reg, "node-1", nil, nil, logr.Discard()))
	names := describedNames(reg)

	dashboards := func(values map[string]any) map[string]string {
		objs, err := chartrender.RenderAPIVersions("workload-control-plane", "siterecovery-system", values)
		require.NoError(t, err)
		out := map[string]string{}
		for _, o := range objs {
			if o.GetKind() == "ConfigMap" && o.GetLabels()["grafana_dashboard"] == "1" {
				data, _, _ := unstructured.NestedStringMap(o.Object, "data")
				for k, js := range data {
					out[k] = js
				}
			}
		}
		return out
	}
	require.Empty(t, dashboards(map[string]any{"drbdNodeAgent": map[string]any{"enabled": false}}), "no agent, no dashboard")
	got := dashboards(nil)
	require.Len(t, got, 1)
	exprs := map[string]string{}
	for key, js := range got {
		require.Contains(t, js, `"title": "Site Recovery / DRBD replication (siterecovery-system)"`)
		for i, e := range dashboardExprs(t, key, js) {
			exprs[fmt.Sprintf("%s #%d", key, i)] = asPromQL(e)
		}
	}
	var problems []string
	for src, r := range parse(t, exprs) {
		if r.Error != "" {
			problems = append(problems, src+": "+r.Error)
			continue
		}
		for _, m := range r.Metrics {
			if !exported(names, m) {
				problems = append(problems, src+": names "+m+", which drbd-node-agent does not export")
			}
		}
		if len(r.Metrics) == 0 {
			problems = append(problems, src+": names no metric: "+exprs[src])
		}
	}
	sort.Strings(problems)
	require.Empty(t, problems, strings.Join(problems, "\n"))
	t.Logf("%d panel and variable queries name only the agent's metrics", len(exprs))
}
