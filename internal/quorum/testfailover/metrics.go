package testfailover

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Result label values.
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
	// ResultCancelled is a test whose request was deleted before it finished.
	ResultCancelled = "cancelled"
)

// Metrics are the test-failover-controller's Prometheus metrics.
type Metrics struct {
	results  *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// defaultMetrics live on controller-runtime's registry, once per process however
// often the controller is set up (tests restart quorum-manager in-process).
var defaultMetrics = NewMetrics(metrics.Registry)

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siterecovery_test_failover_results_total",
			Help: "Finished TestFailovers by protection group and result (succeeded, failed, cancelled).",
		}, []string{"protection_group", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "siterecovery_test_failover_duration_seconds",
			Help:    "Time from a TestFailover's start to the end of its cleanup.",
			Buckets: []float64{5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200},
		}, []string{"protection_group", "result"}),
	}
	reg.MustRegister(m.results, m.duration)
	return m
}

// started creates the group's result series at 0 when a test starts, so that
// the first failure is an increase an alert's increase() sees, not the birth of a
// series at 1.
func (m *Metrics) started(group string) {
	for _, r := range []string{ResultSucceeded, ResultFailed, ResultCancelled} {
		m.results.WithLabelValues(group, r).Add(0)
	}
}

// observe records a test that just finished.
func (m *Metrics) observe(s *scope) {
	st := s.tf.Status
	result := ResultSucceeded
	if st.Phase == srv1alpha1.TestFailoverFailed {
		result = ResultFailed
		if v := s.verdict(); v != nil && v.Reason == ReasonDeleted {
			result = ResultCancelled
		}
	}
	group := s.tf.Spec.ProtectionGroupRef.Name
	m.results.WithLabelValues(group, result).Inc()
	if st.StartTime != nil && st.CompletionTime != nil {
		m.duration.WithLabelValues(group, result).Observe(st.CompletionTime.Sub(st.StartTime.Time).Seconds())
	}
}
