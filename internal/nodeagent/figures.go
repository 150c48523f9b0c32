package nodeagent

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/drbd"
)

// Metric names of the agent's live DRBD figures, for dashboards, alerts and
// their tests.
const (
	MetricDRBDInFlightBytes      = "siterecovery_drbd_in_flight_bytes"
	MetricDRBDCongested          = "siterecovery_drbd_congested"
	MetricDRBDOutOfSyncBytes     = "siterecovery_drbd_out_of_sync_bytes"
	MetricDRBDStatusReadFailures = "siterecovery_drbd_status_read_failures_total"
)

// figuresTimeout bounds the reading a scrape waits for: a drbdsetup that
// hangs costs the scrape its DRBD series, not the scrape.
const figuresTimeout = 5 * time.Second

var (
	// The VM's namespace is vm_namespace, as on quorum-manager's replication
	// series: Prometheus Operator gives every scraped series the agent pod's
	// namespace as namespace.
	connLabels = []string{"node", "vm_namespace", "vm", "protection_group", "peer", "protocol"}
	descFlight = prometheus.NewDesc(MetricDRBDInFlightBytes,
		"Application writes sent to the peer that it has not confirmed (DRBD's ap-in-flight). Under protocol A the VM saw these writes complete: an unplanned failover now would lose them.",
		connLabels, nil)
	descCongested = prometheus.NewDesc(MetricDRBDCongested,
		"1 while DRBD flags the connection congested: its send buffer is over four fifths full, and under protocol A the VM's next writes wait for the link.",
		connLabels, nil)
	descOutOfSync = prometheus.NewDesc(MetricDRBDOutOfSyncBytes,
		"Bytes of the volume marked out of sync towards the peer (DRBD's out-of-sync), read live.",
		append(append([]string(nil), connLabels...), "volume"), nil)
	descReadFailures = prometheus.NewDesc(MetricDRBDStatusReadFailures,
		"Scrapes whose reading of DRBD's figures (drbdsetup status) failed or timed out; they carry no DRBD series.",
		[]string{"node"}, nil)
)

// figures exports DRBD's live replication figures of this node's replicas.
// The DRBDResource status holds them only as of the last state change, as
// events2 broadcasts statistics no oftener (answerStatusRequest), and a
// status write per changed figure would load the API server with every
// write a VM makes. So each scrape reads them from the kernel with
// `drbdsetup status --json --statistics`, as drbd-reactor's Prometheus
// plugin does, and nothing is written.
type figures struct {
	node     string
	adm      *drbd.Adm
	replicas client.Reader // the agent's cache: its node's DRBDResources
	log      logr.Logger
	failures atomic.Uint64
}

// RegisterFigures registers on reg the collector of the live DRBD figures
// of node's replicas, which replicas lists and adm reads.
func RegisterFigures(reg prometheus.Registerer, node string, adm *drbd.Adm, replicas client.Reader, log logr.Logger) error {
	return reg.Register(&figures{node: node, adm: adm, replicas: replicas, log: log})
}

// Describe sends the descriptors of every series figures emits.
func (f *figures) Describe(ch chan<- *prometheus.Desc) {
	ch <- descFlight
	ch <- descCongested
	ch <- descOutOfSync
	ch <- descReadFailures
}

// Collect reads the figures of the resources this agent runs; a resource
// of another tool on the node is not the agent's to export.
func (f *figures) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), figuresTimeout)
	defer cancel()
	if err := f.collect(ctx, ch); err != nil {
		f.failures.Add(1)
		f.log.Info("reading DRBD's figures for a scrape", "error", err.Error())
	}
	ch <- prometheus.MustNewConstMetric(descReadFailures, prometheus.CounterValue, float64(f.failures.Load()), f.node)
}

func (f *figures) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	list := &srv1alpha1.DRBDResourceList{}
	if err := f.replicas.List(ctx, list); err != nil {
		return err
	}
	ours := make(map[string]*srv1alpha1.DRBDResource, len(list.Items))
	for i := range list.Items {
		if r := &list.Items[i]; r.Spec.NodeName == f.node {
			ours[r.Name] = r
		}
	}
	if len(ours) == 0 {
		return nil // nothing to read: no drbdsetup call on a node without replicas
	}
	read, err := f.adm.Status(ctx, "")
	if err != nil {
		return err
	}
	for _, st := range read {
		r := ours[st.Name]
		if r == nil {
			continue
		}
		for id, c := range st.Connections {
			labels := []string{f.node, r.Namespace, strings.TrimPrefix(r.Name, srv1alpha1.DRBDResourceName("")), r.Labels[srv1alpha1.ProtectionGroupLabel],
				peerName(r, id, c.Name), string(r.Spec.Protocol)}
			ch <- prometheus.MustNewConstMetric(descFlight, prometheus.GaugeValue, float64(c.APInFlightSectors)*512, labels...)
			ch <- prometheus.MustNewConstMetric(descCongested, prometheus.GaugeValue, boolGauge(c.Congested), labels...)
			for v, pd := range c.PeerDevices {
				ch <- prometheus.MustNewConstMetric(descOutOfSync, prometheus.GaugeValue, float64(pd.OutOfSyncBytes),
					append(labels, strconv.Itoa(v))...)
			}
		}
	}
	return nil
}

// peerName is the node name of the DRBDResource's peer with DRBD node id
// id, else DRBD's connection name.
func peerName(r *srv1alpha1.DRBDResource, id int, connName string) string {
	for _, p := range r.Spec.Peers {
		if int(p.NodeID) == id {
			return p.NodeName
		}
	}
	return connName
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
