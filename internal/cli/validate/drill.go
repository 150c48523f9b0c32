package validate

import (
	"fmt"
	"slices"
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// drill checks the group's drill schedule with admission's rules (a schedule
// admitted by an older release, a zone that lost the target cluster) and
// reports a group that now runs on the drill's target, where every drill is
// skipped, and a last drill that failed.
func (z *zoneCheck) drill(g *srv1alpha1.ProtectionGroup) {
	d := g.Spec.Drill
	if d == nil {
		return
	}
	t := g.Name
	fix := fmt.Sprintf("edit spec.drill: kubectl edit protectiongroup %s -n %s", g.Name, g.Namespace)
	if _, err := srv1alpha1.ParseDrillSchedule(d.Schedule); err != nil {
		z.r.add("drill", t, Problem, err.Error()+"; no drill runs", fix)
		return
	}
	target := d.Template.TargetCluster
	var names []string
	for _, c := range z.zone.Spec.Clusters {
		names = append(names, c.Name)
	}
	switch {
	case !slices.Contains(names, target):
		z.r.add("drill", t, Problem, fmt.Sprintf("drill targetCluster %q is not a cluster of zone %s; every drill fails", target, z.zone.Name), fix)
		return
	case target == g.Spec.ActiveCluster:
		z.r.add("drill", t, Warning, fmt.Sprintf("the group runs on %s, the drill's targetCluster, so every drill is skipped", target),
			"name the cluster the group fails back to in spec.drill.template.targetCluster, or fail back")
		return
	}
	st := g.Status.Drill
	switch {
	case d.Suspend:
		z.r.add("drill", t, Warning, "drills are suspended (spec.drill.suspend)", fix)
	case st != nil && st.LastResult == srv1alpha1.DrillFailed:
		z.r.add("drill", t, Warning, fmt.Sprintf("the last drill failed: %s", st.Message),
			fmt.Sprintf("kubectl get testfailover %s -n %s -o yaml shows each check's result", st.LastDrill, g.Namespace))
	default:
		msg := fmt.Sprintf("schedule %q (UTC) on %s", d.Schedule, target)
		if st != nil && st.NextScheduleTime != nil {
			msg += ", next " + st.NextScheduleTime.UTC().Format(time.RFC3339)
		}
		if st != nil && st.LastResult == srv1alpha1.DrillPassed {
			msg += "; the last drill " + st.LastDrill + " passed"
		}
		z.r.ok("drill", t, msg)
	}
}
