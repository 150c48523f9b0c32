package validate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// validate scores a group's drill with admission's rules, and warns when the
// group runs on the drill's target or the last drill failed.
func TestDrillChecks(t *testing.T) {
	zone := &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Name: "z"},
		Spec: srv1alpha1.ProtectionZoneSpec{Clusters: []srv1alpha1.ZoneCluster{{Name: "east"}, {Name: "west"}}}}
	group := func(schedule, target, active string, st *srv1alpha1.DrillStatus) *srv1alpha1.ProtectionGroup {
		return &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "shop"},
			Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: active, Drill: &srv1alpha1.DrillSchedule{Schedule: schedule,
				Template: srv1alpha1.DrillTemplate{TargetCluster: target}}},
			Status: srv1alpha1.ProtectionGroupStatus{Drill: st}}
	}
	next := metav1.Date(2026, 12, 13, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		group *srv1alpha1.ProtectionGroup
		want  Score
		msg   string
	}{
		{"sound", group("0 3 * * 0", "west", "east", &srv1alpha1.DrillStatus{NextScheduleTime: &next, LastDrill: "shop-drill-1", LastResult: srv1alpha1.DrillPassed}),
			OK, `schedule "0 3 * * 0" (UTC) on west, next 2026-12-13T03:00:00Z; the last drill shop-drill-1 passed`},
		{"bad schedule", group("0 3 31 2 *", "west", "east", nil), Problem, `drill schedule "0 3 31 2 *" is never due; no drill runs`},
		{"unknown target", group("0 3 * * 0", "north", "east", nil), Problem, `drill targetCluster "north" is not a cluster of zone z`},
		{"runs on the target", group("0 3 * * 0", "west", "west", nil), Warning, "the group runs on west, the drill's targetCluster, so every drill is skipped"},
		{"last drill failed", group("0 3 * * 0", "west", "east", &srv1alpha1.DrillStatus{LastDrill: "shop-drill-2", LastResult: srv1alpha1.DrillFailed,
			Message: "drill shop-drill-2 failed: 1 of 3 checks failed"}), Warning, "the last drill failed: drill shop-drill-2 failed: 1 of 3 checks failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := &zoneCheck{r: &Report{}, zone: zone}
			z.drill(tc.group)
			if assert.Len(t, z.r.Results, 1) {
				assert.Equal(t, "drill", z.r.Results[0].Check)
				assert.Equal(t, tc.want, z.r.Results[0].Score)
				assert.Contains(t, z.r.Results[0].Message, tc.msg)
			}
		})
	}
}
