// Command promql reads a JSON object of named PromQL expressions on stdin,
// parses each with Prometheus's parser, and writes for each the parse error (if
// any) and the metric names its selectors use, as JSON on stdout.
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
	seen := map[string]bool{}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name, ns := vs.Name, ""
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
				if m.Name == "namespace" && m.Type == labels.MatchEqual {
					ns = m.Value
				}
			}
			r.Namespaces = append(r.Namespaces, ns)
			if name != "" {
				seen[name] = true
			}
		}
		return nil
	})
	for n := range seen {
		r.Metrics = append(r.Metrics, n)
	}
	sort.Strings(r.Metrics)
	return r
}
