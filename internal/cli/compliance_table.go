package cli

import (
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/siterecovery/siterecovery/internal/report"
)

// table prints one section per DR namespace: a row per group, then each
// last drill's checks, then what the figures could not cover.
func (r *ComplianceReport) table(w io.Writer, opts printers.PrintOptions, all bool) error {
	for i, n := range r.Namespaces {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if !opts.NoHeaders {
			fmt.Fprintf(w, "DR namespace %s, window %s: %s to %s\n\n", n.Namespace, r.Window, stamp(&n.From), stamp(&n.To))
		}
		if err := complianceTables(w, n, opts, all); err != nil {
			return err
		}
	}
	return nil
}

func complianceTables(w io.Writer, n report.Report, opts printers.PrintOptions, all bool) error {
	t := newTable(w, "GROUP", "RPO MET", "BREACH", "WORST EPISODE", "LAST DRILL", "DRILL", "DRILL RTO", "LAST SUCCESSFUL DRILL",
		"LAST FAILOVER", "FAILOVER RTO").wideColumns("OBJECTIVE", "EPISODES", "MEASURED FROM").with(opts)
	checks := newTable(w, "GROUP", "DRILL", "VM", "CHECK", "RESULT", "MESSAGE").with(opts)
	var notes []string
	for _, g := range n.Groups {
		name := nsPrefix(all, n.Namespace) + g.Name
		drill, drillPhase, drillRTO := "", "", ""
		if d := g.LastDrill; d != nil {
			kind := "manual"
			if d.Scheduled {
				kind = "scheduled"
			}
			drill, drillPhase, drillRTO = d.Name+" ("+kind+")", d.Phase, seconds(d.RTOSeconds)
			for _, c := range d.Checks {
				checks.row(name, d.Name, c.VM, c.Check, passFail(c.Passed), c.Message)
			}
			if d.Note != "" {
				notes = append(notes, name+": drill "+d.Name+": "+d.Note)
			}
		}
		failover, failoverRTO := "", ""
		if f := g.LastFailover; f != nil {
			failover, failoverRTO = f.Name+" "+f.Outcome, seconds(f.RTOSeconds)
			if f.FromHistory {
				failover += " (history)"
			}
			if f.Kind == report.KindDRPlacementControl {
				failover += " (DRPC " + f.Type + ")"
			}
		}
		if g.RPO.Note != "" {
			notes = append(notes, name+": "+g.RPO.Note)
		}
		t.row(name, percent(g.RPO.MetRatio), since(time.Duration(g.RPO.BreachSeconds*float64(time.Second))), worst(g.RPO.Worst),
			drill, drillPhase, drillRTO, stamp(g.LastSuccessfulDrillTime), failover, failoverRTO,
			fmt.Sprintf("%ds", g.RPO.ObjectiveSeconds), fmt.Sprint(g.RPO.Episodes), stamp(&g.RPO.MeasuredFrom))
	}
	notes = append(notes, n.Notes...)
	if len(n.Groups) == 0 {
		fmt.Fprintln(w, "No ProtectionGroups.")
		return nil
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(checks.t.Rows) > 0 {
		fmt.Fprintln(w)
		if err := checks.flush(); err != nil {
			return err
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}
	for _, note := range notes {
		fmt.Fprintln(w, "note: "+note)
	}
	return nil
}

// percent shows a share to three decimals of a percent, so that 99.9% and
// 100% differ; "-" when nothing was measured.
func percent(r *float64) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%.3f%%", *r*100)
}

func seconds(s *float64) string {
	if s == nil {
		return ""
	}
	return since(time.Duration(*s * float64(time.Second)))
}

func worst(e *report.Episode) string {
	if e == nil {
		return ""
	}
	state := "for " + since(time.Duration(e.DurationSeconds*float64(time.Second)))
	if e.Active {
		state = "active, " + state
	}
	return fmt.Sprintf("%s peak %ds at %s, %s", e.Name, e.PeakLagSeconds, stamp(&e.Start), state)
}

func stamp(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func passFail(ok bool) string {
	if ok {
		return "passed"
	}
	return "failed"
}
