package validate

import (
	"fmt"
	"io"
	"text/tabwriter"
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

// Report is every result of one run.
type Report struct {
	Namespace string   `json:"namespace"`
	Results   []Result `json:"results"`
	Problems  int      `json:"problems"`
	Warnings  int      `json:"warnings"`
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

// Table writes the report as aligned columns, fixes under their result.
func (r *Report) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCORE\tCHECK\tTARGET\tMESSAGE")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", res.Score, res.Check, res.Target, res.Message)
		if res.Fix != "" {
			fmt.Fprintf(tw, "\t\t\t  -> %s\n", res.Fix)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d checks: %d problems, %d warnings (DR namespace %s)\n", len(r.Results), r.Problems, r.Warnings, r.Namespace)
	return err
}
