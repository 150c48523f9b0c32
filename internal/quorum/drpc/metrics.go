package drpc

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
)

// Metric names.
const (
	// MetricConsensusStatus is 1 while the DRPC's peers agree on its action, 0
	// while they block it; alert GlobalActionConsensusBlocked fires on 0.
	MetricConsensusStatus = "ramen_global_action_consensus_status"
	// MetricLastSyncTimestamp is the lastGroupSyncTime of the primary VRG.
	MetricLastSyncTimestamp = "ramen_last_sync_timestamp_seconds"
	// MetricScheduleInterval is the DRPolicy's schedulingInterval.
	MetricScheduleInterval = "ramen_policy_schedule_interval_seconds"
)

// Metrics are the DRPC controller's Prometheus metrics.
type Metrics struct {
	consensus *prometheus.GaugeVec
	lastSync  *prometheus.GaugeVec
	interval  *prometheus.GaugeVec
}

var defaultMetrics = newMetrics(metrics.Registry)

func newMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		consensus: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricConsensusStatus,
			Help: "Whether the DRPCs sharing the DRPC's global VGR agree on its action and target: 1 reached, 0 blocked.",
		}, []string{"obj_namespace", "obj_name", "global_vgr"}),
		lastSync: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricLastSyncTimestamp,
			Help: "Unix time of the last group sync of the DRPC's primary VRG; absent when the DRPolicy's schedulingInterval is 0m.",
		}, []string{"obj_namespace", "obj_name", "policyname"}),
		interval: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricScheduleInterval,
			Help: "The DRPolicy schedulingInterval of the DRPC in seconds; absent when it is 0m.",
		}, []string{"obj_namespace", "obj_name", "policyname"}),
	}
	reg.MustRegister(m.consensus, m.lastSync, m.interval)
	return m
}

// observe publishes the DRPC's metrics from its written status.
func (m *Metrics) observe(s *scope) {
	d := s.drpc
	ns, name := d.Namespace, d.Name
	if v, ok := consensusValue(d); ok {
		m.consensus.DeletePartialMatch(prometheus.Labels{"obj_namespace": ns, "obj_name": name})
		m.consensus.WithLabelValues(ns, name, d.Labels[drv1alpha1.GlobalVGRLabel]).Set(v)
	}
	if s.policy == nil {
		return
	}
	interval, ok := parseInterval(s.policy.Spec.SchedulingInterval)
	if !ok || interval == 0 {
		// No RPO tracking when the provider replicates on its own.
		m.deleteSync(ns, name)
		return
	}
	m.interval.WithLabelValues(ns, name, s.policy.Name).Set(interval.Seconds())
	if t := d.Status.LastGroupSyncTime; t != nil {
		m.lastSync.WithLabelValues(ns, name, s.policy.Name).Set(float64(t.Unix()))
	}
}

func (m *Metrics) deleteSync(ns, name string) {
	l := prometheus.Labels{"obj_namespace": ns, "obj_name": name}
	m.lastSync.DeletePartialMatch(l)
	m.interval.DeletePartialMatch(l)
}

// forget deletes every series of a finalized DRPC.
func (m *Metrics) forget(ns, name string) {
	m.consensus.DeletePartialMatch(prometheus.Labels{"obj_namespace": ns, "obj_name": name})
	m.deleteSync(ns, name)
}

// parseInterval parses <number><m|h|d>.
func parseInterval(v string) (time.Duration, bool) {
	if len(v) < 2 {
		return 0, false
	}
	n := 0
	for _, c := range v[:len(v)-1] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[v[len(v)-1]]
	if unit == 0 {
		return 0, false
	}
	return time.Duration(n) * unit, true
}
