package validate

import (
	"encoding/json"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
)

// Score grades one check.
type Score string

// Scores, from best to worst.
const (
	OK      Score = "ok"
	Warning Score = "warning"
	Problem Score = "problem"
)

// Result is one check on one target (a cluster, a group, a VM).
type Result struct {
	Check   string `json:"check"`
	Target  string `json:"target"`
	Score   Score  `json:"score"`
	Message string `json:"message"`
	// Fix says what to do about a warning or problem.
	Fix string `json:"fix,omitempty"`
}

// Report is every result of one run. The CLI sets its apiVersion and kind
// for cli-runtime's printers.
type Report struct {
	metav1.TypeMeta `json:",inline"`
	Namespace       string   `json:"namespace"`
	Results         []Result `json:"results"`
	Problems        int      `json:"problems"`
	Warnings        int      `json:"warnings"`
}

func (r *Report) add(check, target string, s Score, msg, fix string) {
	r.Results = append(r.Results, Result{Check: check, Target: target, Score: s, Message: msg, Fix: fix})
	switch s {
	case Problem:
		r.Problems++
	case Warning:
		r.Warnings++
	}
}

func (r *Report) ok(check, target, msg string) { r.add(check, target, OK, msg, "") }

// DeepCopyObject implements runtime.Object, through the report's JSON form.
func (r *Report) DeepCopyObject() runtime.Object {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	out := &Report{}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

// Table writes the report as aligned columns, fixes under their result.
func (r *Report) Table(w io.Writer) error { return r.Print(w, printers.PrintOptions{}) }

// Print writes the report with cli-runtime's table printer: the fix of a
// warning or problem on the line under it, or with opts.Wide in a FIX column;
// then the counts.
func (r *Report) Print(w io.Writer, opts printers.PrintOptions) error {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "SCORE", Type: "string"}, {Name: "CHECK", Type: "string"}, {Name: "TARGET", Type: "string"},
		{Name: "MESSAGE", Type: "string"}, {Name: "FIX", Type: "string", Priority: 1},
	}}
	for _, res := range r.Results {
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{string(res.Score), res.Check, res.Target, res.Message, res.Fix}})
		if res.Fix != "" && !opts.Wide {
			t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{"", "", "", "  -> " + res.Fix, ""}})
		}
	}
	if err := printers.NewTablePrinter(opts).PrintObj(t, w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d checks: %d problems, %d warnings (DR namespace %s)\n", len(r.Results), r.Problems, r.Warnings, r.Namespace)
	return err
}
