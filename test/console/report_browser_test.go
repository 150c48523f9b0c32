package console_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/console/server"
	"github.com/siterecovery/siterecovery/internal/console/ui"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestReportInBrowser signs in as a viewer on a quorum cluster alone (no
// controller runs) holding a group with two resolved RPO episodes, a passed
// scheduled drill and a completed failover, the console's clock 30 hours
// after the group's creation. The report page shows, over the default 7d
// window (measured from the creation: 30 h), 2 h of breach (93.333 %), the
// worst episode, the drill with its RTO and checks, and the failover's RTO;
// the 24h window leaves both episodes out (100.000 %). The group page then
// shows the drill schedule (next, last drill and result, last passed) and
// the last consistency point (Crash: the VM not frozen and why).
func TestReportInBrowser(t *testing.T) {
	chromium(t)
	s := scheme.New()
	ctx := context.Background()
	ns := env.Namespace
	pg := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: group},
		Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: env.Primary, ZoneRef: &srv1alpha1.LocalObjectReference{Name: "production"},
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Name: "vm-00", Namespace: "apps"}, {Name: "vm-01", Namespace: "apps"}},
			Replication:     srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: 60},
			Drill:           &srv1alpha1.DrillSchedule{Schedule: "0 3 * * 0", Keep: 4, Template: srv1alpha1.DrillTemplate{TargetCluster: env.DR}},
			Consistency:     &srv1alpha1.ConsistencySpec{Mode: srv1alpha1.ConsistencyApplication, FreezeTimeoutSeconds: 20}}}
	c, token := viewerQuorum(t, pg)
	c0 := pg.CreationTimestamp.Time
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: c0.Add(d)} }
	// The drill controller's and test failover's records of the drill.
	pg.Status.Drill = &srv1alpha1.DrillStatus{LastScheduleTime: at(7 * time.Hour), NextScheduleTime: at(7*time.Hour + 7*24*time.Hour),
		LastSuccessfulTime: at(7*time.Hour + 4*time.Minute), LastDrill: "drill-1", LastResult: srv1alpha1.DrillPassed, Message: "drill drill-1 passed"}
	pg.Status.Consistency = &srv1alpha1.ConsistencyStatus{LastPoint: &srv1alpha1.ConsistencyPoint{Time: *at(7*time.Hour + 20*time.Second),
		Source: "TestFailover", Consistency: srv1alpha1.ConsistencyCrash, CrashConsistentVMs: []string{"apps/vm-01"}, FrozenMilliseconds: 1520,
		Message: "apps/vm-01: Guest agent is not responding"}}
	require.NoError(t, c.Client.Status().Update(ctx, pg))
	for i, start := range []time.Duration{time.Hour, 5 * time.Hour} {
		ev := &srv1alpha1.RPOEvent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", group, i+1)},
			Spec: srv1alpha1.RPOEventSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group}, RPOObjectiveSeconds: 60, StartTime: *at(start)}}
		require.NoError(t, c.Client.Create(ctx, ev))
		ev.Status = srv1alpha1.RPOEventStatus{State: srv1alpha1.RPOEventResolved, EndTime: at(start + time.Hour), PeakLagSeconds: int64(300 * (i + 1))}
		require.NoError(t, c.Client.Status().Update(ctx, ev))
	}
	tf := &srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "drill-1", Labels: map[string]string{srv1alpha1.DrillLabel: group},
		// The slot the drill controller names on the drills it starts.
		Annotations: map[string]string{srv1alpha1.DrillScheduledTimeAnnotation: at(7 * time.Hour).UTC().Format(time.RFC3339)}},
		Spec: srv1alpha1.TestFailoverSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group}, TargetCluster: env.DR}}
	require.NoError(t, c.Client.Create(ctx, tf))
	tf.Status = srv1alpha1.TestFailoverStatus{Phase: srv1alpha1.TestFailoverSucceeded, StartTime: at(7 * time.Hour), CompletionTime: at(7*time.Hour + 4*time.Minute),
		Results: []srv1alpha1.CheckResult{{VM: "vm-00", Check: "VMReady", Passed: true, Message: "running", Time: at(7*time.Hour + 50*time.Second)},
			{VM: "vm-01", Check: "VMReady", Passed: true, Message: "running", Time: at(7*time.Hour + 64*time.Second)}}}
	require.NoError(t, c.Client.Status().Update(ctx, tf))
	fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-dr"},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group}, TargetCluster: env.DR}}
	require.NoError(t, c.Client.Create(ctx, fr))
	fr.Status = srv1alpha1.FailoverRequestStatus{Phase: srv1alpha1.FailoverCompleted, CompletionTime: at(8*time.Hour + time.Minute),
		PhaseHistory: []srv1alpha1.PhaseTransition{{Phase: "Pending", Time: metav1.NewMicroTime(c0.Add(8 * time.Hour))},
			{Phase: "Completed", Time: metav1.NewMicroTime(c0.Add(8*time.Hour + 47125*time.Millisecond))}}}
	require.NoError(t, c.Client.Status().Update(ctx, fr))

	url := serveHTTPS(t, server.New(server.Options{API: c.Config, Scheme: s, UI: ui.FS(), TLS: true,
		Namespaces: []string{ns}, LoginAttempts: 1000, Now: func() time.Time { return c0.Add(30 * time.Hour) }}))
	b := newBrowser(t, url)
	b.signIn(token)
	b.run("open the report", chromedp.Click(chromedp.Search(`//nav//a[normalize-space(.)='Report']`)),
		chromedp.WaitVisible(chromedp.Search(`//h1[normalize-space(.)='Compliance report']`)))
	cell := func(label, want string) {
		b.run(fmt.Sprintf("%s reads %s", label, want), chromedp.WaitVisible(chromedp.Search(
			fmt.Sprintf(`//table[@aria-label='Compliance']//tr[td[@data-label='Group'][normalize-space(.)=%q]]/td[@data-label=%q][normalize-space(.)=%q]`, group, label, want))))
	}
	cell("RPO met", "93.333 %")
	cell("Breach", "2 h")
	cell("Worst episode", group+"-2: peak 10 min, for 1 h")
	cell("Last drill", "drill-1 scheduled Succeeded")
	cell("Drill RTO", "1 min 4 s")
	cell("Failover RTO", "47 s")
	cell("Last failover", "to-dr Completed")
	b.waitText("✔ vm-01: VMReady running")
	b.shot("report-7d")
	b.accessible("compliance report")

	b.run("pick the 24h window", chromedp.Click(chromedp.Search(`//button[normalize-space(.)='24h']`)))
	cell("RPO met", "100.000 %")
	cell("Worst episode", "—")
	cell("Drill RTO", "1 min 4 s")
	b.shot("report-24h")

	// The group page: the drill schedule and the last consistency point,
	// times in UTC as the schedule is written.
	utc := func(d time.Duration) string { return c0.Add(d).UTC().Format("2006-01-02 15:04:05") + " UTC" }
	b.run("back to the overview", chromedp.Click(chromedp.Search(`//nav//a[normalize-space(.)='Overview']`)),
		chromedp.WaitVisible(chromedp.Search(`//h1[normalize-space(.)='Overview']`)))
	b.openGroup()
	item := func(list, term, want string) {
		b.run(fmt.Sprintf("%s %s reads %s", list, term, want), chromedp.WaitVisible(chromedp.Search(fmt.Sprintf(
			`//dl[@aria-label=%q]//div[dt[normalize-space(.)=%q]]/dd[normalize-space(.)=%q]`, list, term, want))))
	}
	item("Drills", "Schedule", "0 3 * * 0 (UTC)")
	item("Drills", "Target", env.DR)
	item("Drills", "Next drill", utc(7*time.Hour+7*24*time.Hour))
	item("Drills", "Last drill", "drill-1")
	item("Drills", "Last result", "Passed")
	item("Drills", "Last passed", utc(7*time.Hour+4*time.Minute))
	item("Consistency", "Mode asked", "Application (guests frozen 20 s at most)")
	item("Consistency", "Last point", "Crash "+utc(7*time.Hour+20*time.Second)+" by TestFailover")
	item("Consistency", "Longest freeze", "1520 ms")
	item("Consistency", "Not frozen", "apps/vm-01")
	item("Consistency", "Why Crash", "apps/vm-01: Guest agent is not responding")
	b.shotWhole("group-drills-consistency")
	b.accessible("group drills and consistency")
}
