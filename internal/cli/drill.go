package cli

import (
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/printers"
)

// drillTable prints the drills of the groups that have a schedule, then each
// drill's message (why one was skipped, how the last one ended). row and
// cols are statusTables', which add the NAMESPACE column under -A.
func drillTable(w io.Writer, nss []NamespaceStatus, opts printers.PrintOptions, all bool, cols func(...string) []string, row func(*table, string, ...string)) error {
	var messages []string
	t := newTable(w, cols("GROUP", "DRILL SCHEDULE (UTC)", "TARGET", "NEXT", "LAST DRILL", "RESULT", "LAST PASSED", "ACTIVE")...).with(opts)
	for _, n := range nss {
		for _, g := range n.Groups {
			d := g.Drill
			if d == nil {
				continue
			}
			next := stamp(d.Next)
			if d.Suspended {
				next = "suspended"
			}
			row(t, n.Namespace, g.Name, d.Schedule, d.TargetCluster, next, d.LastDrill, d.LastResult, stamp(d.LastPassed), d.Active)
			if d.Message != "" {
				messages = append(messages, fmt.Sprintf("  %s%s drill: %s", nsPrefix(all, n.Namespace), g.Name, d.Message))
			}
		}
	}
	if len(t.t.Rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	if err := t.flush(); err != nil {
		return err
	}
	for _, m := range messages {
		fmt.Fprintln(w, m)
	}
	return nil
}
