package compliance

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestMetricsFromAPIServer writes two groups and their records to a real
// quorum API server and scrapes the collector with the clock ten hours after
// the first group's creation: db breached for 2 of its 10 hours and passed a
// scheduled drill; web, without a schedule, has no drill and no failover, so
// only its ratio and creation time are exported. Deleting a group removes
// its series at the next scrape.
func TestMetricsFromAPIServer(t *testing.T) {
	zone := harness.Start(t, harness.Options{Scheme: scheme.New()}, harness.Quorum)
	q := zone.Clusters[harness.Quorum]
	ctx := t.Context()
	const ns = "dr-metrics"
	require.NoError(t, q.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	newGroup := func(name string, drill *srv1alpha1.DrillSchedule) *srv1alpha1.ProtectionGroup {
		pg := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: "primary", ZoneRef: &srv1alpha1.LocalObjectReference{Name: "zone"},
				VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: name + "-vm"}}, Drill: drill}}
		require.NoError(t, q.Client.Create(ctx, pg))
		return pg
	}
	db := newGroup("db", &srv1alpha1.DrillSchedule{Schedule: "0 3 * * *", Template: srv1alpha1.DrillTemplate{TargetCluster: "dr"}})
	web := newGroup("web", nil)
	c0 := db.CreationTimestamp.Time
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: c0.Add(d)} }

	ev := &srv1alpha1.RPOEvent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-1"},
		Spec: srv1alpha1.RPOEventSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "db"}, RPOObjectiveSeconds: 300, StartTime: *at(time.Hour)}}
	require.NoError(t, q.Client.Create(ctx, ev))
	ev.Status = srv1alpha1.RPOEventStatus{State: srv1alpha1.RPOEventResolved, EndTime: at(3 * time.Hour), PeakLagSeconds: 800}
	require.NoError(t, q.Client.Status().Update(ctx, ev))

	tf := &srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-drill", Labels: map[string]string{srv1alpha1.DrillLabel: "db"}},
		Spec: srv1alpha1.TestFailoverSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "db"}, TargetCluster: "dr"}}
	require.NoError(t, q.Client.Create(ctx, tf))
	tf.Status = srv1alpha1.TestFailoverStatus{Phase: srv1alpha1.TestFailoverSucceeded, StartTime: at(5 * time.Hour), CompletionTime: at(5*time.Hour + 3*time.Minute),
		Results: []srv1alpha1.CheckResult{{VM: "db-vm", Check: "VMReady", Passed: true, Time: at(5*time.Hour + 72*time.Second)}}}
	require.NoError(t, q.Client.Status().Update(ctx, tf))

	fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-to-dr"},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "db"}, TargetCluster: "dr"}}
	require.NoError(t, q.Client.Create(ctx, fr))
	fr.Status = srv1alpha1.FailoverRequestStatus{Phase: srv1alpha1.FailoverCompleted, CompletionTime: at(7*time.Hour + time.Minute),
		PhaseHistory: []srv1alpha1.PhaseTransition{{Phase: "Pending", Time: metav1.NewMicroTime(c0.Add(7 * time.Hour))},
			{Phase: "Completed", Time: metav1.NewMicroTime(c0.Add(7*time.Hour + 52500*time.Millisecond))}}}
	require.NoError(t, q.Client.Status().Update(ctx, fr))

	c := &Collector{}
	require.Empty(t, scrape(t, c), "nothing before a source is set")
	c.Use(&Source{Reader: q.Client, Namespace: ns, Window: DefaultWindow, Clock: clocktesting.NewFakePassiveClock(c0.Add(10 * time.Hour)), Log: logr.Discard()})
	want := map[string]float64{
		MetricRPOCompliance + "/db":       0.8,
		MetricRPOCompliance + "/web":      1,
		MetricLastSuccessfulDrill + "/db": float64(c0.Add(5*time.Hour + 3*time.Minute).Unix()),
		MetricDrillScheduled + "/db":      1,
		MetricCreated + "/db":             float64(c0.Unix()),
		MetricCreated + "/web":            float64(web.CreationTimestamp.Unix()),
		MetricLastFailoverRTO + "/db":     52.5,
		MetricLastDrillRTO + "/db":        72,
	}
	require.Equal(t, want, scrape(t, c))

	require.NoError(t, q.Client.Delete(ctx, web))
	require.NoError(t, q.Client.Delete(ctx, db))
	require.Empty(t, scrape(t, c), "a deleted group's series are gone")
}

// scrape collects c and returns each series' value by "metric/group".
func scrape(t *testing.T, c *Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			require.Len(t, m.GetLabel(), 1)
			out[f.GetName()+"/"+m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return out
}
