package drill_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/drill"
)

func nightly(keep int32) *srv1alpha1.DrillSchedule {
	return &srv1alpha1.DrillSchedule{Schedule: "0 3 * * *", Keep: keep, Template: srv1alpha1.DrillTemplate{
		TargetCluster: "dr", TimeoutSeconds: 900,
		Checks: srv1alpha1.VerificationChecks{GuestAgent: true, Probe: &srv1alpha1.NetworkProbe{Type: srv1alpha1.ProbeTCP, Port: 5432}},
	}}
}

// TestDrillSchedule walks one group's nightly drills on a quorum API server,
// one reconcile at a time on a clock the test moves: each step is what
// quorum-manager does when the group wakes it at that time.
func TestDrillSchedule(t *testing.T) {
	q := newQuorum(t, at("2026-12-06T02:58:30Z"))
	const g = "db"
	group := q.group(g, nightly(2))
	day := func(d int) time.Time { return at("2026-12-06T03:00:00Z").AddDate(0, 0, d) }

	t.Run("waits for its slot", func(t *testing.T) {
		q.t = t
		res := q.reconcile(g)
		st := q.status(g)
		require.Equal(t, day(0), st.NextScheduleTime.UTC())
		require.Equal(t, group.Generation, st.ObservedGeneration)
		require.Nil(t, st.LastScheduleTime)
		require.Empty(t, q.testFailovers())
		require.InDelta(t, 90*time.Second, res.RequeueAfter, float64(time.Second), "requeued at the slot, no polling")
	})

	var first string
	t.Run("starts the drill at its slot", func(t *testing.T) {
		q.t = t
		q.clock.SetTime(day(0))
		res := q.reconcile(g)
		first = drill.Name(g, day(0))
		tfs := q.testFailovers()
		require.Len(t, tfs, 1)
		tf := tfs[first]
		require.Equal(t, g, tf.Labels[srv1alpha1.DrillLabel])
		require.True(t, metav1.IsControlledBy(&tf, group), "owned by the group")
		require.Equal(t, "2026-12-06T03:00:00Z", tf.Annotations[srv1alpha1.DrillScheduledTimeAnnotation])
		stored := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, q.c.Get(q.ctx, client.ObjectKeyFromObject(group), stored))
		require.Equal(t, srv1alpha1.TestFailoverSpec{
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: g}, TargetCluster: "dr",
			IsolatedNamespace: "sr-drill-db-202612060300", TimeoutSeconds: 900, Checks: stored.Spec.Drill.Template.Checks,
		}, tf.Spec, "the template's checks as stored, with their defaults")
		st := q.status(g)
		require.Equal(t, day(0), st.LastScheduleTime.UTC())
		require.Equal(t, day(1), st.NextScheduleTime.UTC())
		require.Equal(t, first, st.Active)
		require.InDelta(t, 24*time.Hour, res.RequeueAfter, float64(time.Second))
		requireEvents(t, q.drainEvents(), "Normal DrillStarted started drill db-drill-202612060300 on dr")
		q.reconcile(g)
		require.Len(t, q.testFailovers(), 1, "a second reconcile in the same slot starts nothing")
		require.Empty(t, q.drainEvents())
	})

	var passedAt time.Time
	t.Run("records a passed drill once", func(t *testing.T) {
		q.t = t
		passedAt = q.finish(first, srv1alpha1.TestFailoverSucceeded, "every check passed")
		q.reconcile(g)
		st := q.status(g)
		require.Empty(t, st.Active)
		require.Equal(t, first, st.LastDrill)
		require.Equal(t, srv1alpha1.DrillPassed, st.LastResult)
		require.Equal(t, passedAt, st.LastSuccessfulTime.UTC())
		requireEvents(t, q.drainEvents(), "Normal DrillPassed drill db-drill-202612060300 passed")
		q.reconcile(g)
		require.Empty(t, q.drainEvents(), "the outcome is recorded once")
	})

	t.Run("a drill that fails its check leaves lastSuccessfulTime", func(t *testing.T) {
		q.t = t
		q.clock.SetTime(day(1))
		q.reconcile(g)
		second := drill.Name(g, day(1))
		require.Contains(t, q.testFailovers(), second)
		q.finish(second, srv1alpha1.TestFailoverFailed, "1 of 3 checks failed: vm-00 Probe: TCP 5432 refused")
		q.reconcile(g)
		st := q.status(g)
		require.Equal(t, srv1alpha1.DrillFailed, st.LastResult)
		require.Equal(t, second, st.LastDrill)
		require.Equal(t, passedAt, st.LastSuccessfulTime.UTC(), "lastSuccessfulTime is the passed drill's")
		require.Contains(t, st.Message, "drill db-drill-202612070300 failed: 1 of 3 checks failed: vm-00 Probe: TCP 5432 refused")
		requireEvents(t, q.drainEvents(), "Normal DrillStarted", "Warning DrillFailed drill db-drill-202612070300 failed: 1 of 3 checks failed")
	})

	t.Run("another test of the group in progress skips the slot", func(t *testing.T) {
		q.t = t
		manual := &srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-hand"},
			Spec: srv1alpha1.TestFailoverSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: g}, TargetCluster: "dr"}}
		require.NoError(t, q.c.Create(q.ctx, manual))
		q.clock.SetTime(day(2).Add(time.Second))
		q.reconcile(g)
		require.NotContains(t, q.testFailovers(), drill.Name(g, day(2)))
		st := q.status(g)
		require.Equal(t, "skipped the drill due at 2026-12-08T03:00:00Z: test failover by-hand of the group is in progress", st.Message)
		require.Equal(t, day(3), st.NextScheduleTime.UTC(), "the slot is given up, not run late")
		require.Equal(t, day(1), st.LastScheduleTime.UTC())
		requireEvents(t, q.drainEvents(), "Warning DrillSkipped skipped the drill due at 2026-12-08T03:00:00Z")
		q.finish("by-hand", srv1alpha1.TestFailoverSucceeded, "")
	})

	t.Run("a failover of the group in progress skips the slot", func(t *testing.T) {
		q.t = t
		fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-dr"},
			Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: g}, TargetCluster: "dr"}}
		require.NoError(t, q.c.Create(q.ctx, fr))
		q.clock.SetTime(day(3))
		q.reconcile(g)
		require.NotContains(t, q.testFailovers(), drill.Name(g, day(3)))
		require.Equal(t, "skipped the drill due at 2026-12-09T03:00:00Z: failover request to-dr of the group is in progress", q.status(g).Message)
		require.NoError(t, q.c.Delete(q.ctx, fr))
		q.drainEvents()
	})

	t.Run("the previous drill still running skips the slot", func(t *testing.T) {
		q.t = t
		q.clock.SetTime(day(4))
		q.reconcile(g)
		running := drill.Name(g, day(4))
		q.running(running)
		q.clock.SetTime(day(5))
		q.reconcile(g)
		require.NotContains(t, q.testFailovers(), drill.Name(g, day(5)))
		st := q.status(g)
		require.Equal(t, running, st.Active)
		require.Equal(t, "skipped the drill due at 2026-12-11T03:00:00Z: the previous drill "+running+" is still running", st.Message)
		q.finish(running, srv1alpha1.TestFailoverSucceeded, "")
		q.reconcile(g)
		q.drainEvents()
	})

	t.Run("slots missed during downtime run once", func(t *testing.T) {
		q.t = t
		before := len(q.testFailovers())
		q.clock.SetTime(day(15).Add(2 * time.Hour)) // ten slots missed
		q.reconcile(g)
		tfs := q.testFailovers()
		require.Contains(t, tfs, drill.Name(g, day(15)), "the latest missed slot runs")
		require.Len(t, tfs, before+1, "one drill started for the ten slots")
		st := q.status(g)
		require.Equal(t, day(15), st.LastScheduleTime.UTC())
		require.Equal(t, day(16), st.NextScheduleTime.UTC())
		requireEvents(t, q.drainEvents(), "Normal DrillStarted started drill db-drill-202612210300")
	})

	t.Run("retention keeps the newest finished drills and only its own", func(t *testing.T) {
		q.t = t
		q.finish(drill.Name(g, day(15)), srv1alpha1.TestFailoverFailed, "VMReady timed out")
		// Carries the label but is not the group's: never deleted.
		impostor := &srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-drill-200001010000",
			Labels: map[string]string{srv1alpha1.DrillLabel: g}},
			Spec: srv1alpha1.TestFailoverSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: g}, TargetCluster: "dr"}}
		require.NoError(t, q.c.Create(q.ctx, impostor))
		q.finish(impostor.Name, srv1alpha1.TestFailoverSucceeded, "")
		q.reconcile(g)
		var names []string
		for name := range q.testFailovers() {
			names = append(names, name)
		}
		require.ElementsMatch(t, []string{drill.Name(g, day(4)), drill.Name(g, day(15)), "by-hand", impostor.Name}, names)
	})

	t.Run("a spec change keeps the pending slot unless the new schedule has an earlier one", func(t *testing.T) {
		q.t = t
		gen := q.editDrill(func(d *srv1alpha1.DrillSchedule) { d.Keep = 3 })
		q.reconcile(g)
		st := q.status(g)
		require.Equal(t, gen, st.ObservedGeneration)
		require.Equal(t, day(16), st.NextScheduleTime.UTC())
		gen = q.editDrill(func(d *srv1alpha1.DrillSchedule) { d.Schedule = "0 * * * *" })
		res := q.reconcile(g)
		st = q.status(g)
		require.Equal(t, gen, st.ObservedGeneration)
		require.Equal(t, day(15).Add(3*time.Hour), st.NextScheduleTime.UTC(), "hourly: the next hour, not tomorrow 03:00")
		require.InDelta(t, time.Hour, res.RequeueAfter, float64(time.Second))
	})

	t.Run("suspended, then resumed", func(t *testing.T) {
		q.t = t
		q.editDrill(func(d *srv1alpha1.DrillSchedule) { d.Suspend = true })
		res := q.reconcile(g)
		st := q.status(g)
		require.Nil(t, st.NextScheduleTime)
		require.Equal(t, "drills are suspended (spec.drill.suspend)", st.Message)
		require.Zero(t, res.RequeueAfter, "nothing to wake up for")
		q.clock.Step(3 * time.Hour)
		q.reconcile(g)
		require.NotContains(t, q.testFailovers(), drill.Name(g, day(15).Add(3*time.Hour)))
		q.editDrill(func(d *srv1alpha1.DrillSchedule) { d.Suspend = false })
		q.reconcile(g)
		st = q.status(g)
		require.Empty(t, st.Message)
		require.Equal(t, day(15).Add(6*time.Hour), st.NextScheduleTime.UTC(), "no catching up on the slots passed while suspended")
	})
}

// editDrill changes spec.drill of TestDrillSchedule's group and returns the new generation.
func (q *quorum) editDrill(edit func(*srv1alpha1.DrillSchedule)) int64 {
	q.t.Helper()
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(q.t, q.c.Get(q.ctx, client.ObjectKey{Namespace: ns, Name: "db"}, g))
	edit(g.Spec.Drill)
	require.NoError(q.t, q.c.Update(q.ctx, g))
	return g.Generation
}

// TestDrillSurvivesARestartBeforeItsStatus: quorum-manager creates the drill,
// then dies before status.drill says so. The restarted controller finds the
// drill it created by its name and records it; it never starts a second.
func TestDrillSurvivesARestartBeforeItsStatus(t *testing.T) {
	q := newQuorum(t, at("2026-12-06T03:00:00Z"))
	const g = "web"
	q.group(g, nightly(3))
	q.reconcile(g) // next: 03:00 tomorrow
	q.clock.SetTime(at("2026-12-07T03:00:30Z"))

	failing := interceptor.NewClient(q.watch, interceptor.Funcs{
		SubResourceUpdate: func(_ context.Context, _ client.Client, _ string, _ client.Object, _ ...client.SubResourceUpdateOption) error {
			return apierrors.NewServiceUnavailable("quorum-manager killed")
		},
	})
	_, err := q.reconciler(failing).Reconcile(q.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: g}})
	require.Error(t, err)
	name := drill.Name(g, at("2026-12-07T03:00:00Z"))
	require.Contains(t, q.testFailovers(), name, "the drill was created before the status write failed")
	require.Empty(t, q.drainEvents(), "no event for a status never written")

	q.r = q.reconciler(q.c) // restarted
	q.reconcile(g)
	require.Len(t, q.testFailovers(), 1)
	st := q.status(g)
	require.Equal(t, name, st.Active)
	require.Equal(t, at("2026-12-07T03:00:00Z"), st.LastScheduleTime.UTC())
	require.Equal(t, at("2026-12-08T03:00:00Z"), st.NextScheduleTime.UTC())
	requireEvents(t, q.drainEvents(), "Normal DrillStarted started drill "+name)
}

// requireEvents: exactly one event per prefix, in order.
func requireEvents(t *testing.T, got []string, prefixes ...string) {
	t.Helper()
	require.Len(t, got, len(prefixes), "events %q", got)
	for i, p := range prefixes {
		require.True(t, strings.HasPrefix(got[i], p), "event %d is %q, want %q...", i, got[i], p)
	}
}
