package testfailover

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A test's result series exist at 0 from its start, so that the first failure
// is an increase for the SiteRecoveryTestFailoverFailed alert.
func TestResultSeriesStartAtZero(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	m.started("web")
	want := `
# HELP siterecovery_test_failover_results_total Finished TestFailovers by protection group and result (succeeded, failed, cancelled).
# TYPE siterecovery_test_failover_results_total counter
siterecovery_test_failover_results_total{protection_group="web",result="cancelled"} 0
siterecovery_test_failover_results_total{protection_group="web",result="failed"} 0
siterecovery_test_failover_results_total{protection_group="web",result="succeeded"} 0
`
	if err := testutil.CollectAndCompare(m.results, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	m.results.WithLabelValues("web", ResultFailed).Inc()
	if got := testutil.ToFloat64(m.results.WithLabelValues("web", ResultFailed)); got != 1 {
		t.Fatalf("failed = %v after one failure, want 1", got)
	}
}
