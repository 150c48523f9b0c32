package remote

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func probes(t *testing.T, key Key) uint64 {
	m := &dto.Metric{}
	require.NoError(t, defaultMetrics.probe.WithLabelValues(key.Zone, key.Cluster).(prometheus.Metric).Write(m))
	return m.GetHistogram().GetSampleCount()
}

// versionServer answers /version while up is true, like an API server's
// discovery endpoint, and fails otherwise.
func versionServer(t *testing.T, up *atomic.Bool) string {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() || r.URL.Path != "/version" {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"99","gitVersion":"v1.99.0"}`))
	}))
	t.Cleanup(srv.Close)
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %q}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
users: [{name: u, user: {token: s3cret}}]
`, srv.URL, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
}

// A cluster is unreachable only after FailureThreshold failed probes in a row
// and reachable again on the first success; each change of verdict, and no
// other probe, reaches the event sources; the metrics follow.
func TestProbeFailureThreshold(t *testing.T) {
	var up atomic.Bool
	up.Store(true)
	kubeconfig := versionServer(t, &up)
	m := NewManager(runtime.NewScheme(), logr.Discard(), Options{FailureThreshold: 3})
	changes := make(chan Key, 16)
	m.Source("test", Events{Clusters: func(_ context.Context, k Key) []reconcile.Request {
		changes <- k
		return nil
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = m.Start(ctx) }()
	src := m.sources["test"]
	queue := newQueue()
	defer queue.ShutDown()
	require.NoError(t, src.Start(ctx, queue))

	key := Key{Namespace: "dr", Zone: "probe-zone", Cluster: "probe-cluster"}
	require.NoError(t, m.Connect(ctx, key, []byte(kubeconfig), Limits{QPS: 5, Burst: 5, Timeout: 5 * time.Second}))
	select {
	case <-changes: // the first probe, at once on connect: Connecting -> Reachable
	case <-time.After(30 * time.Second):
		t.Fatal("the first probe did not report")
	}
	h := m.Health(key)
	require.Equal(t, Reachable, h.State)
	require.Equal(t, "v1.99.0", h.ServerVersion)
	reachable := func() float64 {
		return testutil.ToFloat64(defaultMetrics.reachable.WithLabelValues(key.Zone, key.Cluster))
	}
	require.Equal(t, 1.0, reachable())

	p := &Prober{Manager: m}
	up.Store(false)
	for i := 1; i < 3; i++ {
		p.ProbeAll()
		h := m.Health(key)
		require.Equal(t, Reachable, h.State, "after %d failed probes", i)
		require.Equal(t, i, h.FailedProbes)
		require.False(t, h.Unreachable())
	}
	p.ProbeAll()
	h = m.Health(key)
	require.True(t, h.Unreachable(), "three failed probes in a row")
	require.Equal(t, "APIServerUnreachable", h.Reason())
	require.Error(t, h.Err)
	require.NotContains(t, h.Err.Error()+h.Message(), "s3cret")
	require.Equal(t, 0.0, reachable())
	require.Equal(t, key, <-changes, "the change to unreachable is announced")
	require.Empty(t, changes, "failed probes below the threshold are not announced")

	up.Store(true)
	p.ProbeAll()
	require.True(t, m.Health(key).Reachable(), "one success makes it reachable again")
	require.Equal(t, 1.0, reachable())
	require.Equal(t, key, <-changes)
	require.Equal(t, uint64(5), probes(t, key), "every probe's latency is observed, failed ones included")

	// A changed kubeconfig replaces the connection: a reconnect.
	reconnects := func() float64 {
		return testutil.ToFloat64(defaultMetrics.reconnects.WithLabelValues(key.Zone, key.Cluster))
	}
	before := reconnects()
	require.NoError(t, m.Connect(ctx, key, []byte(kubeconfig), Limits{QPS: 6, Burst: 6, Timeout: 5 * time.Second}))
	require.Equal(t, before+1, reconnects())
	m.Disconnect(key)
	require.Equal(t, NotConnected, m.Health(key).State)
}
