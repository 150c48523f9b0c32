package protection

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// MetricRequestState is 1 for a ProtectionRequest's current state and 0 for
// the others; all four series exist from the request's first reconcile, so an
// alert sees a request turn Failed instead of a series being born. The phase
// label lets the stuck alert leave out the initial sync, which has a timeout
// of its own and may rightly take hours.
const MetricRequestState = "siterecovery_protection_request_state"

// States of MetricRequestState.
const (
	StateInProgress = "InProgress"
	StateProtected  = "Protected"
	StateFailed     = "Failed"
	// StateRemoving is a deleted request whose protection is being removed.
	StateRemoving = "Removing"
)

var requestStates = []string{StateInProgress, StateProtected, StateFailed, StateRemoving}

// Metrics are the protection-controller's Prometheus metrics.
type Metrics struct {
	state *prometheus.GaugeVec
}

// defaultMetrics live on controller-runtime's registry, once per process
// however often the controller is set up.
var defaultMetrics = newMetrics(metrics.Registry)

func newMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricRequestState,
		Help: "1 for the state (InProgress, Protected, Failed, Removing) a ProtectionRequest is in, 0 for the others; phase is its status.phase.",
	}, []string{"request", "protection_group", "vm_namespace", "vm", "phase", "state"})}
	reg.MustRegister(m.state)
	return m
}

// publish sets the request's state series.
func (m *Metrics) publish(req *srv1alpha1.ProtectionRequest) {
	now := StateInProgress
	switch {
	case !req.DeletionTimestamp.IsZero():
		now = StateRemoving
	case req.Status.Phase == srv1alpha1.ProtectionProtected:
		now = StateProtected
	case req.Status.Phase == srv1alpha1.ProtectionFailed:
		now = StateFailed
	}
	m.forget(req.Name)
	for _, st := range requestStates {
		v := 0.0
		if st == now {
			v = 1
		}
		m.state.WithLabelValues(req.Name, req.Spec.ProtectionGroupRef.Name, req.Spec.VirtualMachine.Namespace, req.Spec.VirtualMachine.Name, string(req.Status.Phase), st).Set(v)
	}
}

// forget drops the series of a request that is gone.
func (m *Metrics) forget(name string) {
	m.state.DeletePartialMatch(prometheus.Labels{"request": name})
}
