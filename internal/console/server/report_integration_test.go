package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/console/server"
	"github.com/siterecovery/siterecovery/internal/report"
)

// reportPage is the page's model: the report, whose notes say what the user
// may not read, and the windows.
type reportPage struct {
	report.Report
	Window  string
	Windows []string
}

// TestReport reads the compliance report page's model: the group breached
// its objective for two resolved hours of the ten since its creation, passed
// a scheduled drill, and failed over in 47.125 s; a viewer, who may not list
// DRPlacementControls, sees that failover and a note, and a user who may
// sees the DRPC's later relocate. The window must be one the page offers; a
// user without any role gets an empty report of notes.
func TestReport(t *testing.T) {
	q := startQuorum(t, server.Options{LoginAttempts: 1000})
	ctx := context.Background()
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, q.admin.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: groupName}, pg))
	c0 := pg.CreationTimestamp.Time
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: c0.Add(d)} }
	for i, start := range []time.Duration{time.Hour, 5 * time.Hour} {
		ev := &srv1alpha1.RPOEvent{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: groupName + "-" + string(rune('a'+i))},
			Spec: srv1alpha1.RPOEventSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: groupName}, RPOObjectiveSeconds: 60, StartTime: *at(start)}}
		q.create(ev)
		ev.Status = srv1alpha1.RPOEventStatus{State: srv1alpha1.RPOEventResolved, EndTime: at(start + time.Hour), PeakLagSeconds: int64(300 * (i + 1))}
		require.NoError(t, q.admin.Status().Update(ctx, ev))
	}
	tf := &srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: "drill-1", Labels: map[string]string{srv1alpha1.DrillLabel: groupName},
		// The slot the drill controller names on the drills it starts.
		Annotations: map[string]string{srv1alpha1.DrillScheduledTimeAnnotation: at(7 * time.Hour).UTC().Format(time.RFC3339)}},
		Spec: srv1alpha1.TestFailoverSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: groupName}, TargetCluster: "dr-cluster"}}
	q.create(tf)
	tf.Status = srv1alpha1.TestFailoverStatus{Phase: srv1alpha1.TestFailoverSucceeded, StartTime: at(7 * time.Hour), CompletionTime: at(7*time.Hour + 4*time.Minute),
		Results: []srv1alpha1.CheckResult{{VM: "vm-00", Check: "VMReady", Passed: true, Time: at(7*time.Hour + 50*time.Second)},
			{VM: "vm-01", Check: "VMReady", Passed: true, Time: at(7*time.Hour + 64*time.Second)}}}
	require.NoError(t, q.admin.Status().Update(ctx, tf))
	fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: "to-dr"},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: groupName}, TargetCluster: "dr-cluster"}}
	q.create(fr)
	fr.Status = srv1alpha1.FailoverRequestStatus{Phase: srv1alpha1.FailoverCompleted, CompletionTime: at(8*time.Hour + time.Minute),
		PhaseHistory: []srv1alpha1.PhaseTransition{{Phase: "Pending", Time: metav1.NewMicroTime(c0.Add(8 * time.Hour))},
			{Phase: "Completed", Time: metav1.NewMicroTime(c0.Add(8*time.Hour + 47125*time.Millisecond))}}}
	require.NoError(t, q.admin.Status().Update(ctx, fr))
	drpc := &drv1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: groupName + "-drpc"},
		Spec: drv1alpha1.DRPlacementControlSpec{ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: groupName},
			DRPolicyRef: srv1alpha1.LocalObjectReference{Name: "policy"}, PreferredCluster: "primary-cluster", FailoverCluster: "dr-cluster",
			Action: drv1alpha1.ActionRelocate, PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": groupName}}}}
	q.create(drpc)
	drpc.Status = drv1alpha1.DRPlacementControlStatus{Phase: drv1alpha1.DRStateRelocated, ActionStartTime: at(9 * time.Hour),
		ActionDuration: &metav1.Duration{Duration: 93250 * time.Millisecond}}
	require.NoError(t, q.admin.Status().Update(ctx, drpc))
	q.role("report-reader", rbacv1.PolicyRule{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"list"}},
		rbacv1.PolicyRule{APIGroups: []string{drv1alpha1.GroupVersion.Group}, Resources: []string{"drplacementcontrols"}, Verbs: []string{"list"}})
	q.clock.advance(time.Until(c0.Add(10 * time.Hour)))

	b := q.browser()
	require.Equal(t, http.StatusOK, b.login(q.tokens["viewer"]).code)
	r := b.get("/api/namespaces/" + drNamespace + "/report?window=24h")
	require.Equal(t, http.StatusOK, r.code, string(r.body))
	var p reportPage
	r.json(t, &p)
	assert.Equal(t, "24h", p.Window)
	assert.Equal(t, []string{"24h", "7d", "30d"}, p.Windows)
	require.Len(t, p.Groups, 1)
	g := p.Groups[0]
	// The console's clock runs on from ten hours after the creation while
	// the test reads; the breach time does not move.
	assert.Equal(t, 7200.0, g.RPO.BreachSeconds)
	assert.GreaterOrEqual(t, g.RPO.MeasuredSeconds, 36000.0)
	require.NotNil(t, g.RPO.MetRatio)
	// MeasuredSeconds is to the millisecond, the ratio from the exact span.
	assert.InDelta(t, 1-7200/g.RPO.MeasuredSeconds, *g.RPO.MetRatio, 1e-7)
	assert.Equal(t, groupName+"-b", g.RPO.Worst.Name, "the higher peak")
	assert.Equal(t, 2, g.RPO.Episodes)
	require.NotNil(t, g.LastDrill)
	assert.True(t, g.LastDrill.Scheduled)
	assert.Equal(t, 64.0, *g.LastDrill.RTOSeconds)
	assert.Equal(t, "to-dr", g.LastFailover.Name)
	assert.Equal(t, 47.125, *g.LastFailover.RTOSeconds)
	assert.Contains(t, p.Notes, report.DRPCsHiddenNote)

	rr := q.browser()
	require.Equal(t, http.StatusOK, rr.login(q.tokens["report-reader"]).code)
	r = rr.get("/api/namespaces/" + drNamespace + "/report?window=24h")
	require.Equal(t, http.StatusOK, r.code, string(r.body))
	p = reportPage{}
	r.json(t, &p)
	require.Len(t, p.Groups, 1)
	f := p.Groups[0].LastFailover
	require.NotNil(t, f)
	assert.Equal(t, groupName+"-drpc", f.Name)
	assert.Equal(t, report.KindDRPlacementControl, f.Kind)
	assert.Equal(t, "primary-cluster", f.TargetCluster)
	assert.Equal(t, 93.25, *f.RTOSeconds)
	assert.NotContains(t, p.Notes, report.DRPCsHiddenNote)

	assert.Equal(t, http.StatusBadRequest, b.get("/api/namespaces/"+drNamespace+"/report?window=2w").code)
	assert.Equal(t, http.StatusUnauthorized, q.browser().get("/api/namespaces/"+drNamespace+"/report").code)

	s := q.browser()
	require.Equal(t, http.StatusOK, s.login(q.tokens["stranger"]).code)
	assert.Equal(t, http.StatusNotFound, s.get("/api/namespaces/"+drNamespace+"/report").code, "a user who may read nothing there")
}
