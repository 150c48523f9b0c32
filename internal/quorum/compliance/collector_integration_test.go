package compliance

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/compliancefixture"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestMetricsFromAPIServer writes two groups and their records to a real
// quorum API server and scrapes the collector with the clock ten hours after
// the first group's creation: db (test/compliancefixture) breached for 2 of
// its 10 hours, passed a scheduled drill and then failed a manual one, which
// has no RTO, so no drill RTO is exported; its last failover is its DRPC's
// relocate, after its FailoverRequest; web, without a schedule, has no drill
// and its DRPC is still failing over, so only its ratio and creation time are
// exported.
// Once the manual drill is deleted, the scheduled drill's RTO is. Deleting a group removes its series at the next scrape.
func TestMetricsFromAPIServer(t *testing.T) {
	zone := harness.Start(t, harness.Options{Scheme: scheme.New()}, harness.Quorum)
	q := zone.Clusters[harness.Quorum]
	ctx := t.Context()
	const ns = "dr-metrics"
	db, err := compliancefixture.Write(ctx, q.Client, ns, compliancefixture.Options{
		Drill: &srv1alpha1.DrillSchedule{Schedule: "0 3 * * *", Template: srv1alpha1.DrillTemplate{TargetCluster: "dr"}}, DRPC: true})
	require.NoError(t, err)
	web := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: "primary", ZoneRef: &srv1alpha1.LocalObjectReference{Name: "zone"},
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "web-vm"}}}}
	require.NoError(t, q.Client.Create(ctx, web))
	c0 := db.CreationTimestamp.Time

	c := &Collector{}
	require.Empty(t, scrape(t, c), "nothing before a source is set")
	c.Use(&Source{Reader: q.Client, Namespace: ns, Window: DefaultWindow, Clock: clocktesting.NewFakePassiveClock(c0.Add(compliancefixture.Now)), Log: logr.Discard()})
	want := map[string]float64{
		MetricRPOCompliance + "/db":       compliancefixture.MetRatio,
		MetricRPOCompliance + "/web":      1,
		MetricLastSuccessfulDrill + "/db": float64(c0.Add(compliancefixture.ScheduledEnd).Unix()),
		MetricDrillScheduled + "/db":      1,
		MetricCreated + "/db":             float64(c0.Unix()),
		MetricCreated + "/web":            float64(web.CreationTimestamp.Unix()),
		MetricLastFailoverRTO + "/db":     compliancefixture.DRPCRTOSeconds,
	}
	require.Equal(t, want, scrape(t, c))

	// With the failed manual drill gone, the scheduled one's RTO is exported.
	require.NoError(t, q.Client.Delete(ctx, &srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: compliancefixture.ManualTest}}))
	want[MetricLastDrillRTO+"/db"] = compliancefixture.ScheduledRTOSeconds
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
