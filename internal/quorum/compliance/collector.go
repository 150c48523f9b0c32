package compliance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/report"
)

// Metric names, for dashboards, alerts and their tests.
const (
	MetricRPOCompliance       = "siterecovery_group_rpo_compliance_ratio"
	MetricLastSuccessfulDrill = "siterecovery_group_last_successful_drill_timestamp_seconds"
	MetricDrillScheduled      = "siterecovery_group_drill_scheduled"
	MetricCreated             = "siterecovery_group_created_timestamp_seconds"
	MetricLastFailoverRTO     = "siterecovery_group_last_failover_rto_seconds"
	MetricLastDrillRTO        = "siterecovery_group_last_drill_rto_seconds"
)

// DefaultWindow is the span the RPO compliance ratio covers unless
// --rpo-compliance-window says otherwise.
const DefaultWindow = 7 * 24 * time.Hour

// readTimeout bounds one scrape's reads of the cache.
const readTimeout = 10 * time.Second

// RBAC on the quorum cluster, in the DR namespace: what the report reads.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups;rpoevents;testfailovers;failoverrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=drplacementcontrols,verbs=get;list;watch

var labels = []string{"protection_group"}

var (
	descCompliance = prometheus.NewDesc(MetricRPOCompliance,
		"Share (0-1) of the compliance window, ending now, that the group's replication lag was within its RPO objective; measured from the group's creation when it is younger; absent when nothing could be measured.", labels, nil)
	descLastSuccess = prometheus.NewDesc(MetricLastSuccessfulDrill,
		"Unix time the group's last drill (scheduled or manual TestFailover) that passed every check ended; absent before the first.", labels, nil)
	descScheduled = prometheus.NewDesc(MetricDrillScheduled,
		"1 when the group has a drill schedule that is not suspended, 0 when it is suspended; absent without a schedule.", labels, nil)
	descCreated = prometheus.NewDesc(MetricCreated,
		"Unix time the group was created: the drill alert's start for a group that never passed a drill.", labels, nil)
	descFailoverRTO = prometheus.NewDesc(MetricLastFailoverRTO,
		"Seconds from the first phase of the group's last finished failover (FailoverRequest, or DRPlacementControl Failover or Relocate) to Completed; absent when it failed or there was none.", labels, nil)
	descDrillRTO = prometheus.NewDesc(MetricLastDrillRTO,
		"Seconds from the start of the group's last drill to its last check passing; absent when a check failed, is pending, or there was none.", labels, nil)
)

// Collector computes the metrics on each scrape. Until SetupWithManager
// gives it a source it exports nothing.
type Collector struct {
	mu  sync.Mutex
	src *Source
}

// Source is where and how the collector reads.
type Source struct {
	Reader    client.Reader
	Namespace string
	// Window is the span of the compliance ratio, ending now.
	Window time.Duration
	Clock  clock.PassiveClock
	Log    logr.Logger
}

// defaultCollector is on controller-runtime's registry from the start, so
// that the metrics are described (dashboards, alert tests) before a manager
// runs.
var defaultCollector = register()

func register() *Collector {
	c := &Collector{}
	metrics.Registry.MustRegister(c)
	return c
}

// SetupWithManager has quorum-manager's collector read mgr's cache in the DR
// namespace; a zero window is DefaultWindow, a nil clock the real one. A
// later call (tests run quorum-manager in-process more than once) replaces
// the source.
func SetupWithManager(mgr ctrl.Manager, namespace string, window time.Duration, clk clock.PassiveClock) error {
	if namespace == "" {
		return errors.New("the compliance metrics need the DR namespace")
	}
	if window <= 0 {
		window = DefaultWindow
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	defaultCollector.Use(&Source{Reader: mgr.GetCache(), Namespace: namespace, Window: window, Clock: clk, Log: ctrl.Log.WithName("compliance")})
	return nil
}

// Use sets the collector's source.
func (c *Collector) Use(src *Source) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.src = src
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCompliance, descLastSuccess, descScheduled, descCreated, descFailoverRTO, descDrillRTO} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A failed read leaves the metrics
// out of this scrape, so an alert sees no stale figure.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src := c.src
	c.mu.Unlock()
	if src == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	in, err := Read(ctx, src.Reader, src.Namespace)
	if err != nil {
		src.Log.Error(err, "reading the compliance report's objects")
		return
	}
	now := src.Clock.Now()
	in.From, in.To, in.Now = now.Add(-src.Window), now, now
	r := report.Build(in)
	for i := range in.Groups {
		pg := &in.Groups[i]
		ch <- prometheus.MustNewConstMetric(descCreated, prometheus.GaugeValue, float64(pg.CreationTimestamp.Unix()), pg.Name)
		if d := pg.Spec.Drill; d != nil {
			ch <- prometheus.MustNewConstMetric(descScheduled, prometheus.GaugeValue, boolFloat(!d.Suspend), pg.Name)
		}
	}
	for _, g := range r.Groups {
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, g.Name)
		}
		if g.RPO.MetRatio != nil {
			gauge(descCompliance, *g.RPO.MetRatio)
		}
		if g.LastSuccessfulDrillTime != nil {
			gauge(descLastSuccess, float64(g.LastSuccessfulDrillTime.Unix()))
		}
		if f := g.LastFailover; f != nil && f.RTOSeconds != nil {
			gauge(descFailoverRTO, *f.RTOSeconds)
		}
		if d := g.LastDrill; d != nil && d.RTOSeconds != nil {
			gauge(descDrillRTO, *d.RTOSeconds)
		}
	}
}

// Read lists what the report is built from in the DR namespace.
func Read(ctx context.Context, r client.Reader, namespace string) (report.Input, error) {
	groups, events := &srv1alpha1.ProtectionGroupList{}, &srv1alpha1.RPOEventList{}
	tfs, frs := &srv1alpha1.TestFailoverList{}, &srv1alpha1.FailoverRequestList{}
	drpcs := &drv1alpha1.DRPlacementControlList{}
	for _, l := range []client.ObjectList{groups, events, tfs, frs, drpcs} {
		if err := r.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return report.Input{}, fmt.Errorf("listing %T in %s: %w", l, namespace, err)
		}
	}
	return report.Input{Namespace: namespace, Groups: groups.Items, Events: events.Items, TestFailovers: tfs.Items, Requests: frs.Items,
		DRPCs: drpcs.Items}, nil
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
