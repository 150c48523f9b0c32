package dashboards

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	// The packages whose metrics the chart's alerts and dashboards use.
	_ "github.com/siterecovery/siterecovery/internal/quorum/compliance"
	_ "github.com/siterecovery/siterecovery/internal/quorum/drpc"
	_ "github.com/siterecovery/siterecovery/internal/quorum/failover"
	_ "github.com/siterecovery/siterecovery/internal/quorum/monitor"
	_ "github.com/siterecovery/siterecovery/internal/quorum/protection"
	_ "github.com/siterecovery/siterecovery/internal/quorum/testfailover"
	"github.com/siterecovery/siterecovery/test/chartrender"
)

// metricName matches the identifiers of our metrics in PromQL. A label matcher
// value or a legend never starts with these prefixes in our files.
var metricName = regexp.MustCompile(`\b(?:siterecovery|ramen)_[a-z0-9_]+\b`)

var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// registered is every metric name on controller-runtime's registry, from the
// descriptors (a vector without series is described but not gathered).
func registered(t *testing.T) map[string]bool {
	reg, ok := metrics.Registry.(prometheus.Collector)
	require.True(t, ok, "controller-runtime's registry describes its collectors")
	return describedNames(reg)
}

// describedNames is every metric name reg describes.
func describedNames(reg prometheus.Collector) map[string]bool {
	ch := make(chan *prometheus.Desc, 256)
	go func() { reg.Describe(ch); close(ch) }()
	names := map[string]bool{}
	for d := range ch {
		if m := descName.FindStringSubmatch(d.String()); m != nil {
			names[m[1]] = true
		}
	}
	return names
}

// exported reports whether a PromQL identifier is a registered series name,
// including a histogram's _bucket, _sum and _count series.
func exported(names map[string]bool, id string) bool {
	if names[id] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(id, suffix); ok && names[base] {
			return true
		}
	}
	return false
}

func TestAlertsAndDashboardsNameOnlyExportedMetrics(t *testing.T) {
	names := registered(t)
	for _, must := range []string{"siterecovery_replication_lag_seconds", "siterecovery_replication_in_sync_percent",
		"siterecovery_replication_connection_state", "siterecovery_rpo_breaches_total", "siterecovery_failover_in_progress",
		"siterecovery_test_failover_results_total", "siterecovery_replication_sync_interval_seconds",
		"siterecovery_replication_last_sync_timestamp_seconds"} {
		require.True(t, names[must], "%s is registered", must)
	}
	objs := render(t, map[string]any{"monitoring": map[string]any{"prometheusRule": map[string]any{"force": true}}})
	exprs := map[string][]string{} // source -> expressions
	dashboards := 0
	for _, o := range objs {
		switch {
		case o.GetKind() == "PrometheusRule":
			groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
			require.NotEmpty(t, groups)
			for _, g := range groups {
				for _, r := range g.(map[string]any)["rules"].([]any) {
					rule := r.(map[string]any)
					exprs["alert "+rule["alert"].(string)] = []string{rule["expr"].(string)}
				}
			}
		case o.GetKind() == "ConfigMap" && o.GetLabels()["grafana_dashboard"] == "1":
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for key, js := range data {
				dashboards++
				exprs["dashboard "+key] = dashboardExprs(t, key, js)
			}
		}
	}
	require.Equal(t, 2, dashboards, "zone overview and group detail")
	for _, alert := range []string{"SiteRecoveryRPOBreached", "SiteRecoveryReplicationDisconnected", "SiteRecoveryFailoverStuck", "SiteRecoveryTestFailoverFailed"} {
		require.Contains(t, exprs, "alert "+alert)
	}
	var unknown []string
	used := 0
	for src, list := range exprs {
		for _, e := range list {
			ids := metricName.FindAllString(e, -1)
			// Only the quorum-manager-down alert is on Prometheus's own up series.
			require.True(t, len(ids) > 0 || strings.Contains(e, "up{"), "%s: %q names no metric", src, e)
			for _, id := range ids {
				used++
				if !exported(names, id) {
					unknown = append(unknown, src+": "+id)
				}
			}
		}
	}
	sort.Strings(unknown)
	require.Empty(t, unknown, "metrics no package exports")
	t.Logf("%d expressions in %d alerts and dashboards name %d metric references, all exported", countAll(exprs), len(exprs), used)
}

func TestPrometheusRuleFollowsTheAPI(t *testing.T) {
	kinds := func(objs []*unstructured.Unstructured) map[string]int {
		out := map[string]int{}
		for _, o := range objs {
			out[o.GetKind()]++
		}
		return out
	}
	require.Zero(t, kinds(render(t, nil))["PrometheusRule"], "not rendered where monitoring.coreos.com/v1 is not served")
	require.Equal(t, 1, kinds(render(t, nil, "monitoring.coreos.com/v1/PrometheusRule"))["PrometheusRule"], "rendered where it is")
	off := map[string]any{"monitoring": map[string]any{"prometheusRule": map[string]any{"enabled": false}}}
	require.Zero(t, kinds(render(t, off, "monitoring.coreos.com/v1/PrometheusRule"))["PrometheusRule"], "disabled by value")
}

// dashboardExprs returns the PromQL of every panel target and templating query.
func dashboardExprs(t *testing.T, name, js string) []string {
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &d), name)
	require.NotEmpty(t, d.UID, name)
	var out []string
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, "%s panel %q", name, p.Title)
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			out = append(out, q)
		}
	}
	return out
}

func countAll(m map[string][]string) int {
	n := 0
	for _, l := range m {
		n += len(l)
	}
	return n
}

func render(t *testing.T, values map[string]any, apiVersions ...string) []*unstructured.Unstructured {
	t.Helper()
	return renderIn(t, "dr-production", values, apiVersions...)
}

// renderIn renders the chart for a release in namespace.
func renderIn(t *testing.T, namespace string, values map[string]any, apiVersions ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := chartrender.RenderAPIVersions("quorum-control-plane", namespace, values, apiVersions...)
	require.NoError(t, err)
	return objs
}
