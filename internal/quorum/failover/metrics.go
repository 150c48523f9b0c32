package failover

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Metrics are the failover-controller's Prometheus metrics.
type Metrics struct {
	duration      *prometheus.HistogramVec
	phaseDuration *prometheus.HistogramVec
	results       *prometheus.CounterVec
	inProgress    *prometheus.GaugeVec
}

var defaultMetrics = newMetrics(metrics.Registry)

func newMetrics(reg prometheus.Registerer) *Metrics {
	buckets := []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800}
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "siterecovery_failover_duration_seconds", Buckets: buckets,
			Help: "Time from a FailoverRequest leaving Pending to Completed or Failed.",
		}, []string{"protection_group", "type", "result"}),
		phaseDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "siterecovery_failover_phase_duration_seconds", Buckets: buckets,
			Help: "Time a FailoverRequest spent in each phase.",
		}, []string{"protection_group", "phase"}),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siterecovery_failover_results_total",
			Help: "Finished FailoverRequests by result and reason.",
		}, []string{"protection_group", "type", "result", "reason"}),
	}
	m.inProgress = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "siterecovery_failover_in_progress",
		Help: "1 while a FailoverRequest of the group is unfinished, labelled with its phase.",
	}, []string{"protection_group", "phase"})
	reg.MustRegister(m.duration, m.phaseDuration, m.results, m.inProgress)
	return m
}

// observe records a request that just finished.
func (m *Metrics) observe(s *scope) {
	st := s.req.Status
	group, typ := s.req.Spec.ProtectionGroupRef.Name, string(s.req.Spec.FailoverType)
	result := "succeeded"
	if st.Phase == srv1alpha1.FailoverFailed {
		result = "failed"
	}
	reason := ""
	for _, c := range st.Conditions {
		if c.Type == srv1alpha1.ConditionReady {
			reason = c.Reason
		}
	}
	m.results.WithLabelValues(group, typ, result, reason).Inc()
	if st.StartTime != nil && st.CompletionTime != nil {
		m.duration.WithLabelValues(group, typ, result).Observe(st.CompletionTime.Sub(st.StartTime.Time).Seconds())
	}
	for i := 0; i+1 < len(st.PhaseHistory); i++ {
		p := st.PhaseHistory[i]
		m.phaseDuration.WithLabelValues(group, p.Phase).Observe(st.PhaseHistory[i+1].Time.Sub(p.Time.Time).Seconds())
	}
}

// progress publishes the phase of an unfinished request; a finished one clears
// the group's series.
func (m *Metrics) progress(fr *srv1alpha1.FailoverRequest) {
	group := fr.Spec.ProtectionGroupRef.Name
	m.inProgress.DeletePartialMatch(prometheus.Labels{"protection_group": group})
	if !terminal(fr.Status.Phase) {
		m.inProgress.WithLabelValues(group, string(fr.Status.Phase)).Set(1)
	}
}

// divergedMetrics exports what a returned fenced-off cluster wrote while it
// was cut off, until it has rejoined: the SiteRecoveryDivergedSiteReturned
// alert fires on it.
var divergedMetrics = newDivergedMetrics(metrics.Registry)

type divergedGauge struct{ bytes *prometheus.GaugeVec }

func newDivergedMetrics(reg prometheus.Registerer) divergedGauge {
	g := divergedGauge{bytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "siterecovery_group_diverged_bytes",
		Help: "Bytes a returned fenced-off cluster wrote while it was cut off, by group and cluster, until they are discarded and it has resynced (0 then).",
	}, []string{"protection_group", "cluster"})}
	reg.MustRegister(g.bytes)
	return g
}

// set records n bytes for the group's cluster. One quorum-manager serves one
// DR namespace, and Prometheus labels its series with the pod's namespace.
func (d divergedGauge) set(group, cluster string, n int64) {
	d.bytes.WithLabelValues(group, cluster).Set(float64(n))
}

// reset drops the group's series: it records no fenced-off cluster any more.
func (d divergedGauge) reset(group string) {
	d.bytes.DeletePartialMatch(prometheus.Labels{"protection_group": group})
}
