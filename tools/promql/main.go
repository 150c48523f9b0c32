// Command promql reads a JSON object of named PromQL expressions on stdin,
// parses each with Prometheus's parser, and writes for each the parse error (if
// any), the metric names its selectors use, the labels each selector matches on
// and the labels its aggregations and vector matchings name, as JSON on stdout.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// result is what the command reports for one expression.
type result struct {
	Error   string   `json:"error,omitempty"`
	Metrics []string `json:"metrics,omitempty"`
	// Namespaces has, for each selector, the value of its namespace="..."
	// matcher ("" when it has none), so that a test sees how it is scoped.
	Namespaces []string `json:"namespaces,omitempty"`
	// Selectors are the expression's vector selectors, each with the labels
	// its matchers name (test/alerts checks them against the metric's labels).
	Selectors []selector `json:"selectors,omitempty"`
	// Grouping are the labels of by/without, on/ignoring and
	// group_left/group_right clauses.
	Grouping []string `json:"grouping,omitempty"`
}

type selector struct {
	Metric string   `json:"metric"`
	Labels []string `json:"labels,omitempty"`
}

func main() {
	var in map[string]string
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, "promql: reading the expressions:", err)
		os.Exit(1)
	}
	out := map[string]result{}
	for name, expr := range in {
		out[name] = parse(expr)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "promql:", err)
		os.Exit(1)
	}
}

func parse(expr string) result {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return result{Error: err.Error()}
	}
	var r result
	seen, grouping := map[string]bool{}, map[string]bool{}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			r.addSelector(n, seen)
		case *parser.AggregateExpr:
			for _, l := range n.Grouping {
				grouping[l] = true
			}
		case *parser.BinaryExpr:
			if vm := n.VectorMatching; vm != nil {
				for _, l := range append(append([]string{}, vm.MatchingLabels...), vm.Include...) {
					grouping[l] = true
				}
			}
		}
		return nil
	})
	r.Metrics, r.Grouping = sortedKeys(seen), sortedKeys(grouping)
	return r
}

func (r *result) addSelector(vs *parser.VectorSelector, seen map[string]bool) {
	sel := selector{Metric: vs.Name}
	ns := ""
	for _, m := range vs.LabelMatchers {
		switch {
		case m.Name == labels.MetricName:
			if m.Type == labels.MatchEqual {
				sel.Metric = m.Value
			}
		default:
			sel.Labels = append(sel.Labels, m.Name)
		}
		if m.Name == "namespace" && m.Type == labels.MatchEqual {
			ns = m.Value
		}
	}
	r.Namespaces = append(r.Namespaces, ns)
	r.Selectors = append(r.Selectors, sel)
	if sel.Metric != "" {
		seen[sel.Metric] = true
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
