package remote

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/siterecovery/siterecovery/internal/kubeconfig"
)

// Key names one workload cluster of one zone in one DR namespace.
type Key struct {
	Namespace string
	Zone      string
	Cluster   string
}

func (k Key) String() string { return k.Namespace + "/" + k.Zone + "/" + k.Cluster }

// ZoneRequest is a request naming the key's ProtectionZone.
func (k Key) ZoneRequest() reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: k.Namespace, Name: k.Zone}}
}

// zoneObject is the key's ProtectionZone, as far as a map function needs it.
func (k Key) zoneObject() client.Object {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Zone}}
}

// ErrNotConnected is returned for a cluster that has no working connection yet.
var ErrNotConnected = errors.New("cluster not connected")

// Options tune a Manager; the zero value is production's.
type Options struct {
	// Clock stamps the probes; real by default.
	Clock clock.PassiveClock
	// FailureThreshold is how many probes in a row must fail before a cluster
	// is unreachable; DefaultFailureThreshold if zero.
	FailureThreshold int
	// UnservedRetry is how often a connection tries again to watch the kinds
	// its cluster did not serve; DefaultUnservedRetry if zero.
	UnservedRetry time.Duration
}

// Manager holds one connection per workload cluster: the ClusterCache of
// quorum-manager.
type Manager struct {
	scheme    *runtime.Scheme
	clock     clock.PassiveClock
	threshold int
	log       logr.Logger
	metrics   *Metrics
	// unservedRetry: Options.UnservedRetry.
	unservedRetry time.Duration

	mu       sync.RWMutex
	clusters map[Key]*connection
	// connected holds every key that ever had a connection, to count reconnects.
	connected map[Key]bool
	// stopped is set when the manager that ran this one stopped (Start).
	stopped bool
	sources map[string]*EventSource
}

// NewManager returns an empty Manager; Connect adds clusters.
func NewManager(scheme *runtime.Scheme, log logr.Logger, o Options) *Manager {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.FailureThreshold <= 0 {
		o.FailureThreshold = DefaultFailureThreshold
	}
	if o.UnservedRetry <= 0 {
		o.UnservedRetry = DefaultUnservedRetry
	}
	return &Manager{scheme: scheme, clock: o.Clock, threshold: o.FailureThreshold, log: log, metrics: defaultMetrics, unservedRetry: o.UnservedRetry,
		clusters: map[Key]*connection{}, connected: map[Key]bool{}, sources: map[string]*EventSource{}}
}

// Source implements ClusterCache. Sources may be registered before or after
// clusters connect.
func (m *Manager) Source(controller string, ev Events) source.Source {
	m.mu.Lock()
	src, ok := m.sources[controller]
	if ok {
		src.Add(ev)
	} else {
		src = NewEventSource(controller, ev)
		m.sources[controller] = src
	}
	conns := make([]*connection, 0, len(m.clusters))
	for _, c := range m.clusters {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	for _, c := range conns {
		if err := c.ensureWatches(src.watches()); err != nil {
			c.log.Error(err, "watching a remote kind", "controller", controller)
		}
	}
	return src
}

// Connect implements Connector.
func (m *Manager) Connect(ctx context.Context, key Key, kubeconfigData []byte, limits Limits) error {
	sum := fmt.Sprintf("%x", sha256.Sum256(append(kubeconfigData, []byte(fmt.Sprint(limits))...)))
	m.mu.RLock()
	existing := m.clusters[key]
	m.mu.RUnlock()
	if existing != nil && existing.hash == sum {
		return nil
	}
	cfg, err := kubeconfig.RESTConfig(kubeconfigData, limits)
	if err != nil {
		return err
	}
	cfg.UserAgent = "siterecovery-quorum-manager"
	conn, err := m.newConnection(key, cfg, sum)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		conn.stop()
		return ErrStopped
	}
	old := m.clusters[key]
	m.clusters[key] = conn
	again := m.connected[key]
	m.connected[key] = true
	m.mu.Unlock()
	m.metrics.connected(key, again)
	// Again, now that Source sees the connection: a source registered while it
	// was built is watched too (the watches are idempotent).
	if err := conn.ensureWatches(m.watches()); err != nil {
		conn.log.Error(err, "watching a remote kind")
	}
	if old != nil {
		old.stop()
		m.log.Info("reconnected to cluster: kubeconfig changed", "cluster", key.String())
	}
	// Probe at once so that the zone does not wait a whole interval for its first
	// verdict; the prober keeps probing from then on.
	go func() {
		conn.probe(m.clock.Now())
		m.notify(key)
	}()
	return nil
}

// ErrStopped is returned by Connect once the manager running this one stopped.
var ErrStopped = errors.New("remote cluster manager stopped")

// Start runs until ctx ends, then stops every connection: a connection's cache
// and its watches of a workload cluster last as long as the controller manager
// they serve (add the Manager to it with Add), not as long as the process.
func (m *Manager) Start(ctx context.Context) error {
	<-ctx.Done()
	m.mu.Lock()
	conns := m.clusters
	m.clusters, m.stopped = map[Key]*connection{}, true
	m.mu.Unlock()
	for _, c := range conns {
		c.stop()
	}
	return nil
}

// NeedLeaderElection is false: every replica keeps its connections warm.
func (m *Manager) NeedLeaderElection() bool { return false }

// Disconnect implements Connector.
func (m *Manager) Disconnect(key Key) {
	m.mu.Lock()
	conn := m.clusters[key]
	delete(m.clusters, key)
	m.mu.Unlock()
	if conn != nil {
		conn.stop()
		m.metrics.forget(key)
	}
}

// Clusters implements Connector.
func (m *Manager) Clusters(namespace, zone string) []Key {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var keys []Key
	for k := range m.clusters {
		if k.Namespace == namespace && k.Zone == zone {
			keys = append(keys, k)
		}
	}
	return keys
}

// Remote is what controllers use to act on one cluster.
type Remote struct {
	Key Key
	// Cached reads the watched kinds from the cluster's cache.
	Cached client.Reader
	// Direct reads and writes through the API server, bounded by the timeout.
	Direct client.Client
	// Config is the connection's configuration, for the calls Direct cannot
	// make (KubeVirt's subresources); nil from remote/fake.
	Config *rest.Config
}

// Get returns key's connection, or ErrNotConnected while it has none or its
// cache has not synced yet.
func (m *Manager) Get(key Key) (*Remote, error) {
	m.mu.RLock()
	conn := m.clusters[key]
	m.mu.RUnlock()
	if conn == nil {
		return nil, fmt.Errorf("%w: %s has no connection (is it in the zone, with a valid kubeconfig Secret?)", ErrNotConnected, key.Cluster)
	}
	if !conn.synced() {
		return nil, fmt.Errorf("%w: %s cache has not synced yet", ErrNotConnected, key.Cluster)
	}
	return &Remote{Key: key, Cached: servedReader{Reader: conn.cluster.GetCache(), cluster: key.Cluster}, Direct: conn.direct, Config: conn.cfg}, nil
}

// Health implements ClusterCache.
func (m *Manager) Health(key Key) Health {
	m.mu.RLock()
	conn := m.clusters[key]
	m.mu.RUnlock()
	if conn == nil {
		return Health{State: NotConnected}
	}
	return conn.health()
}

// notify tells every source that key's reachability or connection changed.
func (m *Manager) notify(key Key) {
	m.mu.RLock()
	srcs := make([]*EventSource, 0, len(m.sources))
	for _, s := range m.sources {
		srcs = append(srcs, s)
	}
	m.mu.RUnlock()
	for _, s := range srcs {
		s.ClusterChanged(key)
	}
}

func (m *Manager) newConnection(key Key, cfg *rest.Config, hash string) (*connection, error) {
	cl, err := cluster.New(streamConfig(cfg), func(o *cluster.Options) {
		o.Scheme = m.scheme
		// A read of a kind nobody watches must fail, not block on a new informer
		// against an API server that may be down.
		// No reader here uses managedFields; without them every cached object,
		// and every copy a List makes, is about half the size.
		// Its informers catch up as soon as a restarted API server answers,
		// and each watches only what key's DR namespace owns (scopeOf).
		o.Cache = cache.Options{ReaderFailOnMissingInformer: true, DefaultTransform: cache.TransformStripManagedFields(), NewInformer: newScopedInformer(key)}
	})
	if err != nil {
		return nil, fmt.Errorf("building cluster client for %s: %w", key.Cluster, err)
	}
	direct, err := client.New(cfg, client.Options{Scheme: m.scheme})
	if err != nil {
		return nil, fmt.Errorf("building direct client for %s: %w", key.Cluster, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	conn := &connection{key: key, cluster: cl, direct: direct, cfg: cfg, hash: hash, ctx: ctx, cancel: cancel,
		threshold: m.threshold, metrics: m.metrics, log: m.log.WithValues("cluster", key.String()),
		last: Health{State: Connecting}, watched: map[string]bool{}, unserved: map[string]bool{}, counted: map[string]bool{}}
	if err := conn.ensureWatches(m.watches()); err != nil {
		cancel()
		// A watch starts with discovery, which fails while the API server
		// is down: the zone tries again rather than calling the kubeconfig
		// invalid (zone.connectRetry).
		return nil, fmt.Errorf("%w: starting the watches of %s: %w", ErrUnreachable, key.Cluster, err)
	}
	go conn.run(ctx)
	go conn.retryUnserved(ctx, m.unservedRetry, m.watches)
	return conn, nil
}

// watches lists the watches of every source.
func (m *Manager) watches() []kindWatch {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var ws []kindWatch
	for _, s := range m.sources {
		ws = append(ws, s.watches()...)
	}
	return ws
}

// streamConfig is cfg for the cache's lists and watches: without the timeout
// that bounds each request. client-go's timeout covers a response's whole
// body, so it would cut every watch after timeoutSeconds, and the cache would
// open it again: a stream of new watch requests to every cluster, for every
// watched kind, for as long as quorum-manager runs. The API server ends a
// watch itself after minutes; a cluster that stops answering is still found
// by the probe (bounded by the timeout) and the transport's health pings.
func streamConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Timeout = 0
	return c
}
