package testfailover

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
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

// An unfinished test has one in-progress series, with its phase; a finished
// or deleted one has none.
func TestInProgressSeries(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	tf := &srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Name: "drill"},
		Spec: srv1alpha1.TestFailoverSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "web"}}}
	tf.Status.Phase = srv1alpha1.TestFailoverBooting
	m.progress(tf)
	tf.Status.Phase = srv1alpha1.TestFailoverVerifying
	m.progress(tf)
	want := `
# HELP siterecovery_test_failover_in_progress 1 while a TestFailover is unfinished, labelled with its phase.
# TYPE siterecovery_test_failover_in_progress gauge
siterecovery_test_failover_in_progress{phase="Verifying",protection_group="web",test_failover="drill"} 1
`
	if err := testutil.CollectAndCompare(m.inProgress, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	tf.Status.Phase = srv1alpha1.TestFailoverSucceeded
	m.progress(tf)
	if n := testutil.CollectAndCount(m.inProgress); n != 0 {
		t.Fatalf("%d series after the test finished, want 0", n)
	}
}
