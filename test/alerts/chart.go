// Package alerts proves the quorum-control-plane chart's alert rules and
// Grafana dashboards against Prometheus itself: promtool's rule unit tests for
// every alert (testdata/alerts.test.yaml), a check that the rules and panels use
// only the metrics and labels quorum-manager registers, and, with
// `make test-alerts-e2e`, a real Prometheus scraping quorum-manager's secure
// metrics endpoint as the chart's ServiceMonitor does. The sandbox's opt-in
// Prometheus (`make sandbox PROMETHEUS=1`) is started by this package too.
package alerts

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/siterecovery/siterecovery/test/chartrender"
)

// ChartName is the chart whose rules and dashboards this package proves;
// WorkloadChartName's rules (on drbd-node-agent's DRBD figures) are proved
// the same way.
const (
	ChartName         = "quorum-control-plane"
	WorkloadChartName = "workload-control-plane"
)

// Chart is what the quorum-control-plane chart renders for monitoring.
type Chart struct {
	// Rules is a Prometheus rules file: the PrometheusRule's spec.groups,
	// which is the rules file format (monitoring.coreos.com/v1 PrometheusRule
	// embeds Prometheus's rulefmt groups).
	Rules []byte
	// Alerts are the alert names of Rules, in the chart's order.
	Alerts []string
	// Job is the metrics Service's name: the job label a ServiceMonitor gives
	// its series, which the QuorumManagerDown alert selects.
	Job string
	// Panels are every dashboard panel, with their PromQL.
	Panels []Panel
}

// Panel is one Grafana panel of a chart's dashboard.
type Panel struct {
	Dashboard, Title string
	// Exprs are its targets' PromQL, with Grafana's variables left in.
	Exprs []string
}

// Query returns expr with Grafana's template variables ($namespace,
// $protection_group, ...) replaced by vars, as Grafana sends it.
func Query(expr string, vars map[string]string) string {
	for k, v := range vars {
		expr = strings.ReplaceAll(expr, "$"+k, v)
	}
	return expr
}

// Render renders the chart for a release in namespace with values over its
// defaults, the PrometheusRule forced (no cluster serves its API here).
func Render(namespace string, values map[string]any) (*Chart, error) {
	c, err := render(ChartName, namespace, values)
	if err != nil {
		return nil, err
	}
	if c.Rules == nil || c.Job == "" || len(c.Panels) == 0 {
		return nil, errors.New("the chart renders no PrometheusRule, metrics Service or dashboard")
	}
	return c, nil
}

// RenderWorkload renders the workload-control-plane chart's rules as Render
// does the quorum chart's; it has no dashboards.
func RenderWorkload(namespace string, values map[string]any) (*Chart, error) {
	c, err := render(WorkloadChartName, namespace, values)
	if err != nil {
		return nil, err
	}
	if c.Rules == nil {
		return nil, errors.New("the workload chart renders no PrometheusRule")
	}
	return c, nil
}

func render(chart, namespace string, values map[string]any) (*Chart, error) {
	objs, err := chartrender.RenderValues(chart, namespace, withForcedRule(values))
	if err != nil {
		return nil, err
	}
	c := &Chart{}
	for _, o := range objs {
		switch {
		case o.GetKind() == "PrometheusRule":
			if err := c.addRules(o); err != nil {
				return nil, err
			}
		case o.GetKind() == "Service" && o.GetLabels()["app.kubernetes.io/component"] == "metrics":
			c.Job = o.GetName()
		case o.GetKind() == "ConfigMap" && o.GetLabels()["grafana_dashboard"] != "":
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for key, js := range data {
				panels, err := dashboardPanels(key, js)
				if err != nil {
					return nil, err
				}
				c.Panels = append(c.Panels, panels...)
			}
		}
	}
	return c, nil
}

func (c *Chart) addRules(o *unstructured.Unstructured) error {
	groups, _, err := unstructured.NestedSlice(o.Object, "spec", "groups")
	if err != nil {
		return err
	}
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rules {
			if name, ok := r.(map[string]any)["alert"].(string); ok {
				c.Alerts = append(c.Alerts, name)
			}
		}
	}
	c.Rules, err = yaml.Marshal(map[string]any{"groups": groups})
	return err
}

// withForcedRule returns values with monitoring.prometheusRule.force set;
// values is not changed.
func withForcedRule(values map[string]any) map[string]any {
	out := maps.Clone(values)
	if out == nil {
		out = map[string]any{}
	}
	mon, _ := out["monitoring"].(map[string]any)
	mon = maps.Clone(mon)
	if mon == nil {
		mon = map[string]any{}
	}
	rule, _ := mon["prometheusRule"].(map[string]any)
	rule = maps.Clone(rule)
	if rule == nil {
		rule = map[string]any{}
	}
	rule["force"] = true
	mon["prometheusRule"] = rule
	out["monitoring"] = mon
	return out
}

func dashboardPanels(name, js string) ([]Panel, error) {
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", name, err)
	}
	out := make([]Panel, 0, len(d.Panels))
	for _, p := range d.Panels {
		panel := Panel{Dashboard: name, Title: p.Title}
		for _, t := range p.Targets {
			panel.Exprs = append(panel.Exprs, t.Expr)
		}
		out = append(out, panel)
	}
	return out, nil
}
