package remote

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric names, for dashboards, alerts and their tests. Series are labelled by
// zone and cluster name only: nothing from a kubeconfig ever becomes a label.
const (
	MetricReachable     = "siterecovery_remote_cluster_reachable"
	MetricProbeDuration = "siterecovery_remote_probe_duration_seconds"
	MetricReconnects    = "siterecovery_remote_reconnects_total"
	MetricWatchEvents   = "siterecovery_remote_watch_events_total"
	MetricCachedObjects = "siterecovery_remote_cached_objects"
)

// Metrics are the remote connections' Prometheus metrics.
type Metrics struct {
	reachable  *prometheus.GaugeVec
	probe      *prometheus.HistogramVec
	reconnects *prometheus.CounterVec
	events     *prometheus.CounterVec
	objects    *prometheus.GaugeVec
}

var defaultMetrics = newMetrics(metrics.Registry)

func newMetrics(reg prometheus.Registerer) *Metrics {
	labels := []string{"zone", "cluster"}
	m := &Metrics{
		reachable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricReachable,
			Help: "1 while a workload cluster's API server answers the health probe, 0 while it is connecting or unreachable.",
		}, labels),
		probe: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricProbeDuration,
			Help:    "Time a health probe of a workload cluster's API server took, failed probes included.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, labels),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricReconnects,
			Help: "Connections to a workload cluster built after its first: its kubeconfig or client settings changed, or its zone connected it again after dropping it.",
		}, labels),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricWatchEvents,
			Help: "Adds, updates and deletes a workload cluster's watches delivered to this quorum-manager's cache, by kind (the lists after a watch ends included). The caches watch only what the DR namespace owns.",
		}, []string{"zone", "cluster", "kind"}),
		objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricCachedObjects,
			Help: "Objects of a kind this quorum-manager's cache of a workload cluster holds.",
		}, []string{"zone", "cluster", "kind"}),
	}
	reg.MustRegister(m.reachable, m.probe, m.reconnects, m.events, m.objects)
	return m
}

func (m *Metrics) probed(k Key, took time.Duration, reachable bool) {
	m.probe.WithLabelValues(k.Zone, k.Cluster).Observe(took.Seconds())
	v := 0.0
	if reachable {
		v = 1
	}
	m.reachable.WithLabelValues(k.Zone, k.Cluster).Set(v)
}

func (m *Metrics) connected(k Key, again bool) {
	m.reachable.WithLabelValues(k.Zone, k.Cluster).Set(0)
	if again {
		m.reconnects.WithLabelValues(k.Zone, k.Cluster).Inc()
	}
}

// forget drops the reachability of a cluster that left its zone; its counter
// and histogram keep their history; its cache holds nothing any more.
func (m *Metrics) forget(k Key) {
	m.reachable.DeleteLabelValues(k.Zone, k.Cluster)
	m.objects.DeletePartialMatch(prometheus.Labels{"zone": k.Zone, "cluster": k.Cluster})
}
