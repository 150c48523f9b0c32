package monitor

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Metric names, for dashboards, alerts and their tests.
const (
	MetricLag             = "siterecovery_replication_lag_seconds"
	MetricGroupLag        = "siterecovery_replication_group_lag_seconds"
	MetricInSyncPercent   = "siterecovery_replication_in_sync_percent"
	MetricOutOfSyncBytes  = "siterecovery_replication_out_of_sync_bytes"
	MetricConnectionState = "siterecovery_replication_connection_state"
	MetricHealth          = "siterecovery_replication_health"
	MetricFailoverReady   = "siterecovery_replication_failover_ready"
	MetricRPOObjective    = "siterecovery_rpo_objective_seconds"
	MetricRPOBreachActive = "siterecovery_rpo_breach_active"
	MetricRPOBreaches     = "siterecovery_rpo_breaches_total"
	// MetricSyncInterval and MetricLastSync describe the groups replicated in
	// cycles (VolSync, Offloaded): their lag alerts compare
	// MetricGroupLag with multiples of the interval.
	MetricSyncInterval = "siterecovery_replication_sync_interval_seconds"
	MetricLastSync     = "siterecovery_replication_last_sync_timestamp_seconds"
)

// Metrics are the replication-monitor's Prometheus metrics. Per-VM series of a
// VM that left its group, and every series of a deleted group, are removed.
type Metrics struct {
	lag, inSync, outOfSync, connection               *prometheus.GaugeVec
	groupLag, health, ready, objective, breachActive *prometheus.GaugeVec
	breaches                                         *prometheus.CounterVec
	syncInterval, lastSync                           *prometheus.GaugeVec

	mu sync.Mutex
	// seen is, per group, each VM's "namespace/name" and its connection state.
	seen map[string]map[vmLabels]string
	// healthOf is each group's last health.
	healthOf map[string]string
}

type vmLabels struct{ namespace, vm string }

var defaultMetrics = newMetrics(metrics.Registry)

func newMetrics(reg prometheus.Registerer) *Metrics {
	vm := []string{"protection_group", "vm_namespace", "vm"}
	group := []string{"protection_group"}
	gauge := func(name, help string, labels []string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		lag: gauge(MetricLag, "Replication lag of a VM's most lagging volume: 0 while in sync, else seconds since it was last known in sync.", vm),
		inSync: gauge(MetricInSyncPercent,
			"Percent of a VM's least synced volume that the DR replica holds (0-100).", vm),
		outOfSync: gauge(MetricOutOfSyncBytes, "Bytes of a VM's volumes still to be sent to the DR replica.", vm),
		connection: gauge(MetricConnectionState,
			"1 for a VM's current DRBD connection state (Connected, Connecting, StandAlone, Unknown, ...) as seen from the active side.",
			[]string{"protection_group", "vm_namespace", "vm", "state"}),
		groupLag: gauge(MetricGroupLag, "Largest replication lag of any volume of the group, in seconds.", group),
		health: gauge(MetricHealth, "1 for the group's current replication health (Healthy, Syncing, Degraded, Disconnected, Unknown).",
			[]string{"protection_group", "health"}),
		ready:        gauge(MetricFailoverReady, "1 when every VM's DR replica is UpToDate and promotable.", group),
		objective:    gauge(MetricRPOObjective, "The group's RPO objective in seconds.", group),
		breachActive: gauge(MetricRPOBreachActive, "1 while the group's lag exceeds its RPO objective (an RPOEvent is Active).", group),
		breaches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRPOBreaches,
			Help: "RPO breach episodes started (RPOEvents created)."}, group),
		syncInterval: gauge(MetricSyncInterval,
			"The scheduling interval of a group replicated in cycles (VolSync, Offloaded), in seconds; absent when the storage replicates on its own.",
			[]string{"protection_group", "backend"}),
		lastSync: gauge(MetricLastSync,
			"Unix time of the last complete sync of a group replicated in cycles (VolSync, Offloaded); absent before the first one.",
			[]string{"protection_group", "backend"}),
		seen:     map[string]map[vmLabels]string{},
		healthOf: map[string]string{},
	}
	reg.MustRegister(m.lag, m.inSync, m.outOfSync, m.connection, m.groupLag, m.health, m.ready, m.objective, m.breachActive, m.breaches,
		m.syncInterval, m.lastSync)
	return m
}

// record publishes a group's status.
func (m *Metrics) record(group string, objective int32, st *srv1alpha1.ReplicationGroupStatusStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groupLag.WithLabelValues(group).Set(float64(st.MaxLagSeconds))
	m.ready.WithLabelValues(group).Set(boolFloat(st.FailoverReady))
	m.objective.WithLabelValues(group).Set(float64(objective))
	m.breachActive.WithLabelValues(group).Set(boolFloat(st.ActiveRPOEvent != ""))
	m.breaches.WithLabelValues(group).Add(0)
	if old, ok := m.healthOf[group]; ok && old != string(st.Health) {
		m.health.DeleteLabelValues(group, old)
	}
	m.healthOf[group] = string(st.Health)
	m.health.WithLabelValues(group, string(st.Health)).Set(1)

	prev := m.seen[group]
	now := make(map[vmLabels]string, len(st.VirtualMachines))
	for i := range st.VirtualMachines {
		vm := &st.VirtualMachines[i]
		l := vmLabels{vm.Namespace, vm.Name}
		var lag, oos int64
		pct, conn := 100.0, connUnknown
		if len(vm.Volumes) == 0 {
			pct = 0
		}
		for j := range vm.Volumes {
			v := &vm.Volumes[j]
			lag, oos = max(lag, v.LagSeconds), oos+v.OutOfSyncBytes
			if p, err := strconv.ParseFloat(v.PercentInSync, 64); err == nil {
				pct = min(pct, p)
			} else if !inSync(v) {
				pct = 0
			}
			if j == 0 || v.ConnectionState != connConnected {
				conn = v.ConnectionState
			}
		}
		m.lag.WithLabelValues(group, l.namespace, l.vm).Set(float64(lag))
		m.inSync.WithLabelValues(group, l.namespace, l.vm).Set(pct)
		m.outOfSync.WithLabelValues(group, l.namespace, l.vm).Set(float64(oos))
		if old, ok := prev[l]; ok && old != conn {
			m.connection.DeleteLabelValues(group, l.namespace, l.vm, old)
		}
		m.connection.WithLabelValues(group, l.namespace, l.vm, conn).Set(1)
		now[l] = conn
	}
	for l, conn := range prev {
		if _, ok := now[l]; !ok {
			m.deleteVM(group, l, conn)
		}
	}
	m.seen[group] = now
}

// recordSynced publishes the cycle of a group replicated in cycles.
func (m *Metrics) recordSynced(group string, s *Synced) {
	match := prometheus.Labels{"protection_group": group}
	m.syncInterval.DeletePartialMatch(match)
	m.lastSync.DeletePartialMatch(match)
	backend := string(s.Backend)
	if s.Interval > 0 {
		m.syncInterval.WithLabelValues(group, backend).Set(s.Interval.Seconds())
	}
	if s.LastSyncTime != nil {
		m.lastSync.WithLabelValues(group, backend).Set(float64(s.LastSyncTime.Unix()))
	}
}

func (m *Metrics) deleteVM(group string, l vmLabels, conn string) {
	m.lag.DeleteLabelValues(group, l.namespace, l.vm)
	m.inSync.DeleteLabelValues(group, l.namespace, l.vm)
	m.outOfSync.DeleteLabelValues(group, l.namespace, l.vm)
	m.connection.DeleteLabelValues(group, l.namespace, l.vm, conn)
}

// forget removes every series of a deleted group.
func (m *Metrics) forget(group string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	match := prometheus.Labels{"protection_group": group}
	for _, v := range []*prometheus.GaugeVec{m.lag, m.inSync, m.outOfSync, m.connection, m.groupLag, m.health, m.ready, m.objective, m.breachActive, m.syncInterval, m.lastSync} {
		v.DeletePartialMatch(match)
	}
	m.breaches.DeletePartialMatch(match)
	delete(m.seen, group)
	delete(m.healthOf, group)
}

func (m *Metrics) breachStarted(group string) { m.breaches.WithLabelValues(group).Inc() }

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
