package dashboards

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/siterecovery/siterecovery/test/chartrender"
	"github.com/siterecovery/siterecovery/test/harness"
)

var forceRule = map[string]any{"monitoring": map[string]any{"prometheusRule": map[string]any{"force": true}}}

// alertRules returns the rendered PrometheusRule's rules by alert name.
func alertRules(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		if o.GetKind() != "PrometheusRule" {
			continue
		}
		groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
		for _, g := range groups {
			for _, r := range g.(map[string]any)["rules"].([]any) {
				rule := r.(map[string]any)
				out[rule["alert"].(string)] = rule
			}
		}
	}
	require.NotEmpty(t, out, "the chart renders alerts")
	return out
}

var (
	grafanaInterval = regexp.MustCompile(`\$__\w+|\$\{__\w+\}`)
	labelValues     = regexp.MustCompile(`^label_values\((.*),\s*\w+\)$`)
)

// asPromQL turns a dashboard query into the PromQL Grafana sends: its interval
// variables become durations, and a label_values() query its selector.
func asPromQL(q string) string {
	q = grafanaInterval.ReplaceAllString(q, "5m")
	if m := labelValues.FindStringSubmatch(q); m != nil {
		q = m[1]
	}
	return q
}

type parsed struct {
	Error      string   `json:"error"`
	Metrics    []string `json:"metrics"`
	Namespaces []string `json:"namespaces"`
}

// parse runs Prometheus's own parser (tools/promql) over exprs.
func parse(t *testing.T, exprs map[string]string) map[string]parsed {
	t.Helper()
	return harness.ParsePromQL[parsed](t, exprs)
}

// TestAlertsAndDashboardsParse loads every alert and dashboard expression into
// Prometheus's PromQL parser, checks that each names only exported metrics, and
// that each alert selects only its release's namespace.
func TestAlertsAndDashboardsParse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Prometheus's PromQL parser (tools/promql)")
	}
	const ns = "dr-production"
	objs := render(t, forceRule)
	exprs := map[string]string{}
	for name, rule := range alertRules(t, objs) {
		exprs["alert "+name] = rule["expr"].(string)
	}
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetLabels()["grafana_dashboard"] == "1" {
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for key, js := range data {
				for i, e := range dashboardExprs(t, key, js) {
					exprs[fmt.Sprintf("dashboard %s #%d", key, i)] = asPromQL(e)
				}
			}
		}
	}
	names := registered(t)
	var problems []string
	for src, r := range parse(t, exprs) {
		if r.Error != "" {
			problems = append(problems, fmt.Sprintf("%s: %q: %s", src, exprs[src], r.Error))
			continue
		}
		for _, m := range r.Metrics {
			if m != "up" && !exported(names, m) {
				problems = append(problems, src+": names "+m+", which no package exports")
			}
		}
		if strings.HasPrefix(src, "alert ") {
			for _, n := range r.Namespaces {
				if n != ns {
					problems = append(problems, fmt.Sprintf("%s: a selector is scoped to namespace %q, not the release's %s", src, n, ns))
				}
			}
		}
	}
	sort.Strings(problems)
	require.Empty(t, problems)
	t.Logf("%d expressions parse and name exported metrics", len(exprs))
}

// TestAlertsLinkRunbooks checks that every alert's runbook_url, of the quorum
// and the workload chart, points at a section of docs/runbooks.md.
func TestAlertsLinkRunbooks(t *testing.T) {
	anchors := markdownAnchors(t, filepath.Join(harness.RepoRoot(), "docs/runbooks.md"))
	const base = "https://github.com/siterecovery/siterecovery/blob/main/docs/runbooks.md#"
	rules := alertRules(t, render(t, forceRule))
	workload, err := chartrender.RenderAPIVersions("workload-control-plane", "dr-production", forceRule)
	require.NoError(t, err)
	maps.Copy(rules, alertRules(t, workload))
	for name, rule := range rules {
		ann, _ := rule["annotations"].(map[string]any)
		url, _ := ann["runbook_url"].(string)
		anchor, ok := strings.CutPrefix(url, base)
		require.True(t, ok, "alert %s: runbook_url %q is not in docs/runbooks.md", name, url)
		require.True(t, anchors[anchor], "alert %s: docs/runbooks.md has no section #%s", name, anchor)
	}
}

var nonSlug = regexp.MustCompile(`[^a-z0-9 _-]`)

// markdownAnchors returns the anchors GitHub gives the headings of a page.
func markdownAnchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if h, ok := strings.CutPrefix(s.Text(), "#"); ok {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			out[strings.ReplaceAll(nonSlug.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	require.NoError(t, s.Err())
	return out
}

// TestDashboardsPerRelease checks that two quorum releases' dashboards do not
// collide in Grafana: uids (at most 40 characters) and titles differ.
func TestDashboardsPerRelease(t *testing.T) {
	seen := map[string]string{}
	for _, ns := range []string{"dr-production", "dr-staging"} {
		for _, o := range renderIn(t, ns, nil) {
			if o.GetKind() != "ConfigMap" || o.GetLabels()["grafana_dashboard"] != "1" {
				continue
			}
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for key, js := range data {
				var d struct{ UID, Title string }
				require.NoError(t, json.Unmarshal([]byte(js), &d), key)
				require.LessOrEqual(t, len(d.UID), 40, "Grafana's uid limit")
				for _, id := range []string{"uid " + d.UID, "title " + d.Title} {
					require.NotContains(t, seen, id, "%s of %s", key, ns)
					seen[id] = ns
				}
			}
		}
	}
	require.Len(t, seen, 8, "two dashboards of two releases, each with a uid and a title")
}
