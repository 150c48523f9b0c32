package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/report"
)

// The status report shows a group's drill schedule and its last drill, and
// why a drill was skipped; a namespace without drills prints no drill table.
func TestDrillTable(t *testing.T) {
	ts := func(s string) *metav1.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return &metav1.Time{Time: v}
	}
	pg := &srv1alpha1.ProtectionGroup{
		Spec: srv1alpha1.ProtectionGroupSpec{Drill: &srv1alpha1.DrillSchedule{Schedule: "0 3 * * 0",
			Template: srv1alpha1.DrillTemplate{TargetCluster: "dr"}}},
		Status: srv1alpha1.ProtectionGroupStatus{Drill: &srv1alpha1.DrillStatus{
			NextScheduleTime: ts("2026-12-13T03:00:00Z"), LastSuccessfulTime: ts("2026-11-29T03:07:12Z"),
			LastDrill: "db-drill-202612060300", LastResult: srv1alpha1.DrillFailed,
			Message: "drill db-drill-202612060300 failed: 1 of 3 checks failed",
		}},
	}
	nss := []NamespaceStatus{{Namespace: "dr-production", Groups: []GroupStatus{{Name: "db", Drill: report.DrillScheduleOf(pg)}, {Name: "plain"}}}}
	var out bytes.Buffer
	require.NoError(t, statusTables(&out, nss, printers.PrintOptions{}, false))
	require.Contains(t, out.String(), "GROUP   DRILL SCHEDULE (UTC)   TARGET   NEXT                   LAST DRILL              RESULT   LAST PASSED            ACTIVE\n"+
		"db      0 3 * * 0              dr       2026-12-13T03:00:00Z   db-drill-202612060300   Failed   2026-11-29T03:07:12Z   -\n"+
		"  db drill: drill db-drill-202612060300 failed: 1 of 3 checks failed\n")

	nss[0].Groups = nss[0].Groups[1:]
	out.Reset()
	require.NoError(t, statusTables(&out, nss, printers.PrintOptions{}, false))
	require.NotContains(t, out.String(), "DRILL")
}
