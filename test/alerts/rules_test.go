package alerts

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const releaseNamespace = "dr-production"

// ruleSuite is a chart's rules and the promtool tests that prove them.
type ruleSuite struct {
	chart    string
	render   func(namespace string, values map[string]any) (*Chart, error)
	testFile string
	alerts   int // how many alerts the chart has
	// exporter is the registry of the binary whose metrics the rules use.
	exporter func(t *testing.T) prometheus.Collector
}

var suites = []ruleSuite{
	{ChartName, Render, "testdata/alerts.test.yaml", 17, quorumManagerMetrics},
	{WorkloadChartName, RenderWorkload, "testdata/workload-alerts.test.yaml", 2, agentMetrics},
}

// ruleTests is the part of promtool's test file format the coverage check
// reads.
type ruleTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name        string `json:"name"`
		InputSeries []struct {
			Series string `json:"series"`
		} `json:"input_series"`
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

func readRuleTests(t *testing.T, testFile string) ruleTests {
	t.Helper()
	raw, err := os.ReadFile(testFile)
	require.NoError(t, err)
	var rt ruleTests
	require.NoError(t, yaml.Unmarshal(raw, &rt))
	require.Equal(t, []string{"rules.yaml"}, rt.RuleFiles, "the rules the test renders")
	return rt
}

// TestAlertRules runs promtool's rule unit tests (testdata/*.test.yaml)
// against the rules each chart renders with its default values: each alert
// fires with its labels and annotations, and stays quiet just under its
// threshold.
func TestAlertRules(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Prometheus's promtool (hack/prometheus.sh)")
	}
	promtool := filepath.Join(PrometheusDir(t, "promtool"), "promtool")
	for _, s := range suites {
		t.Run(s.chart, func(t *testing.T) {
			chart, err := s.render(releaseNamespace, nil)
			require.NoError(t, err)
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), chart.Rules, 0o600))
			tests, err := os.ReadFile(s.testFile)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "alerts.test.yaml"), tests, 0o600))
			// promtool first checks the rules file as `promtool check rules` would.
			cmd := exec.Command(promtool, "test", "rules", "alerts.test.yaml")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "promtool test rules:\n%s", out)
			t.Logf("promtool: %d alerts, %d test groups:\n%s", len(chart.Alerts), len(readRuleTests(t, s.testFile).Tests), out)
		})
	}
}

// TestEveryAlertHasFiringAndQuietCases fails when an alert of a chart has no
// case where it fires or none where it stays quiet, so that a new alert comes
// with its tests; and when a case names an alert the chart does not have.
func TestEveryAlertHasFiringAndQuietCases(t *testing.T) {
	for _, s := range suites {
		t.Run(s.chart, func(t *testing.T) {
			chart, err := s.render(releaseNamespace, nil)
			require.NoError(t, err)
			firing, quiet := map[string]int{}, map[string]int{}
			var unknown []string
			for _, tc := range readRuleTests(t, s.testFile).Tests {
				for _, a := range tc.AlertRuleTest {
					if !slices.Contains(chart.Alerts, a.Alertname) {
						unknown = append(unknown, tc.Name+": "+a.Alertname)
					}
					if len(a.ExpAlerts) > 0 {
						firing[a.Alertname]++
					} else {
						quiet[a.Alertname]++
					}
				}
			}
			require.Empty(t, unknown, "cases of alerts the chart does not render")
			var missing []string
			for _, a := range chart.Alerts {
				if firing[a] == 0 {
					missing = append(missing, a+": no case where it fires")
				}
				if quiet[a] == 0 {
					missing = append(missing, a+": no case where it stays quiet")
				}
			}
			sort.Strings(missing)
			require.Empty(t, missing, "every alert of the chart needs both cases in %s", s.testFile)
			require.Len(t, chart.Alerts, s.alerts, "the chart's alerts")
			t.Logf("%d alerts, each with a firing and a quiet case", len(chart.Alerts))
		})
	}
}

// PrometheusDir builds cmd ("promtool", "prometheus" or both) when missing and
// returns the folder hack/prometheus.sh caches them in.
func PrometheusDir(t testing.TB, cmd ...string) string {
	t.Helper()
	dir, err := BuildPrometheus(cmd...)
	require.NoError(t, err)
	return dir
}
