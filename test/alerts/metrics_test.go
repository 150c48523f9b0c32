package alerts

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	// The packages that register the metrics the chart's alerts and
	// dashboards use, as quorum-manager links them.
	_ "github.com/siterecovery/siterecovery/internal/quorum/compliance"
	_ "github.com/siterecovery/siterecovery/internal/quorum/drpc"
	_ "github.com/siterecovery/siterecovery/internal/quorum/failover"
	_ "github.com/siterecovery/siterecovery/internal/quorum/monitor"
	_ "github.com/siterecovery/siterecovery/internal/quorum/protection"
	_ "github.com/siterecovery/siterecovery/internal/quorum/remote"
	_ "github.com/siterecovery/siterecovery/internal/quorum/testfailover"

	"github.com/siterecovery/siterecovery/internal/nodeagent"
	"github.com/siterecovery/siterecovery/test/harness"
)

// targetLabels are the labels Prometheus Operator gives every series of a
// ServiceMonitor's targets (prometheus-operator's
// pkg/prometheus/promcfg.go relabelings), beside the metric's own.
var targetLabels = []string{"namespace", "job", "instance", "pod", "service", "endpoint", "container"}

var descRE = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)

// quorumManagerMetrics is controller-runtime's registry, with the metrics
// of the packages imported above, as quorum-manager serves it.
func quorumManagerMetrics(t *testing.T) prometheus.Collector {
	reg, ok := metrics.Registry.(prometheus.Collector)
	require.True(t, ok, "controller-runtime's registry describes its collectors")
	return reg
}

// agentMetrics is a registry with drbd-node-agent's DRBD figures, as the
// agent registers them on the registry it serves.
func agentMetrics(t *testing.T) prometheus.Collector {
	reg := prometheus.NewRegistry()
	require.NoError(t, nodeagent.RegisterFigures(reg, "node-1", nil, nil, logr.Discard()))
	return reg
}

// registeredLabels is every series name reg describes with its variable
// labels; a histogram's _bucket (with le), _sum and _count too.
func registeredLabels(t *testing.T, reg prometheus.Collector) map[string][]string {
	t.Helper()
	ch := make(chan *prometheus.Desc, 256)
	go func() { reg.Describe(ch); close(ch) }()
	out := map[string][]string{}
	for d := range ch {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			continue
		}
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		out[m[1]] = labels
		out[m[1]+"_bucket"] = append(slices.Clone(labels), "le")
		out[m[1]+"_sum"], out[m[1]+"_count"] = labels, labels
	}
	out["up"] = nil // Prometheus's own, per target
	return out
}

var seriesRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}$`)
var labelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="[^"]*"`)

// TestAlertSeriesAreExported checks every input series of the rule tests
// against what the binary registers: the metric exists, and its labels are
// exactly the metric's own plus target labels. A renamed metric or label fails
// here, not silently in users' Prometheus.
func TestAlertSeriesAreExported(t *testing.T) {
	for _, s := range suites {
		t.Run(s.chart, func(t *testing.T) {
			names := registeredLabels(t, s.exporter(t))
			var problems []string
			n := 0
			for _, tc := range readRuleTests(t, s.testFile).Tests {
				for _, in := range tc.InputSeries {
					n++
					m := seriesRE.FindStringSubmatch(in.Series)
					require.NotNil(t, m, "%s: series %q", tc.Name, in.Series)
					own, ok := names[m[1]]
					if !ok {
						problems = append(problems, fmt.Sprintf("%s: %s is not registered", tc.Name, m[1]))
						continue
					}
					var got []string
					for _, l := range labelRE.FindAllStringSubmatch(m[2], -1) {
						if !slices.Contains(targetLabels, l[1]) {
							got = append(got, l[1])
						}
					}
					if !sameSet(got, own) {
						problems = append(problems, fmt.Sprintf("%s: %s has labels %v, the product exports %v", tc.Name, m[1], got, own))
					}
				}
			}
			require.Empty(t, problems)
			t.Logf("%d input series carry the product's metric names and labels", n)
		})
	}
}

// TestRulesAndPanelsUseExportedLabels parses every alert and dashboard
// expression with Prometheus's parser (tools/promql) and checks that each
// names registered metrics, that each selector matches only on labels its
// metric carries, and that each by/on/group_left label is carried by one of the
// expression's metrics.
func TestRulesAndPanelsUseExportedLabels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Prometheus's PromQL parser (tools/promql)")
	}
	for _, s := range suites {
		t.Run(s.chart, func(t *testing.T) {
			chart, err := s.render(releaseNamespace, nil)
			require.NoError(t, err)
			problems := usedLabelProblems(t, chart, registeredLabels(t, s.exporter(t)))
			require.Empty(t, problems)
		})
	}
}

// usedLabelProblems lists the metrics and labels chart's rules and panels
// use that names does not register.
func usedLabelProblems(t *testing.T, chart *Chart, names map[string][]string) []string {
	t.Helper()
	exprs := map[string]string{}
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	require.NoError(t, yaml.Unmarshal(chart.Rules, &rules))
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs["alert "+r.Alert] = r.Expr
		}
	}
	for _, p := range chart.Panels {
		for i, e := range p.Exprs {
			exprs[fmt.Sprintf("panel %s %q #%d", p.Dashboard, p.Title, i)] = Query(e, map[string]string{"namespace": releaseNamespace, "protection_group": "web"})
		}
	}
	var problems []string
	for src, r := range parsePromQL(t, exprs) {
		if r.Error != "" {
			problems = append(problems, src+": "+r.Error)
			continue
		}
		carried := slices.Clone(targetLabels)
		for _, s := range r.Selectors {
			own, ok := names[s.Metric]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: %s is not registered", src, s.Metric))
				continue
			}
			carried = append(carried, own...)
			for _, l := range s.Labels {
				if !slices.Contains(own, l) && !slices.Contains(targetLabels, l) {
					problems = append(problems, fmt.Sprintf("%s: %s has no label %s (it has %v)", src, s.Metric, l, own))
				}
			}
		}
		for _, l := range r.Grouping {
			if !slices.Contains(carried, l) {
				problems = append(problems, fmt.Sprintf("%s: no metric of it carries %s", src, l))
			}
		}
	}
	sort.Strings(problems)
	t.Logf("%d alert and panel expressions checked against the registered metrics and their labels", len(exprs))
	return problems
}

type parsed struct {
	Error     string
	Selectors []struct {
		Metric string
		Labels []string
	}
	Grouping []string
}

// parsePromQL runs Prometheus's own parser (tools/promql) over exprs.
func parsePromQL(t *testing.T, exprs map[string]string) map[string]parsed {
	t.Helper()
	return harness.ParsePromQL[parsed](t, exprs)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
