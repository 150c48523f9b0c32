package remote

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// MapFunc maps a remote object of cluster key to the quorum objects to reconcile.
type MapFunc func(ctx context.Context, key Key, obj client.Object) []reconcile.Request

// ClusterMapFunc maps a cluster whose reachability changed, or whose connection
// was replaced, to the quorum objects to reconcile.
type ClusterMapFunc func(ctx context.Context, key Key) []reconcile.Request

// Kind is a remote kind a controller watches on every cluster, with the map
// from its objects to the controller's requests.
type Kind struct {
	Object client.Object
	Map    MapFunc
}

// Events is what a controller wants to hear about from the workload clusters.
type Events struct {
	// Kinds are watched on every connected cluster: each add, update and
	// delete is mapped by its Map.
	Kinds []Kind
	// Clusters, if set, maps each change of a cluster's reachability (and each
	// new connection) to requests.
	Clusters ClusterMapFunc
}

// ZoneRequests is a ClusterMapFunc that enqueues the cluster's ProtectionZone.
func ZoneRequests(_ context.Context, key Key) []reconcile.Request {
	return []reconcile.Request{key.ZoneRequest()}
}

// ZoneMap turns a map from a ProtectionZone into a ClusterMapFunc: the zone of
// the changed cluster is mapped by f.
func ZoneMap(f handler.MapFunc) ClusterMapFunc {
	return func(ctx context.Context, key Key) []reconcile.Request {
		return f(ctx, key.zoneObject())
	}
}

// EventSource is one controller's source of remote events: the implementations
// of ClusterCache (the Manager, remote/fake) feed it, the controller starts it.
// Object events are mapped on the caller's goroutine (an informer's) and
// queued; cluster changes are queued as keys and mapped on the source's own
// goroutine, so a probe never waits for a controller's lists.
type EventSource struct {
	controller string
	requests   *Requests

	mu       sync.Mutex
	kinds    map[string]Kind
	order    []string
	clusters ClusterMapFunc
	changed  []Key
	signal   chan struct{}
}

// NewEventSource returns the source of a controller's events.
func NewEventSource(controller string, ev Events) *EventSource {
	s := &EventSource{controller: controller, requests: NewRequests(), kinds: map[string]Kind{}, signal: make(chan struct{}, 1)}
	s.Add(ev)
	return s
}

// Add merges ev into s, for a controller that asks for its source again: a
// kind already watched keeps its first map, and so do cluster changes.
func (s *EventSource) Add(ev Events) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range ev.Kinds {
		id := kindID(k.Object)
		if _, ok := s.kinds[id]; !ok {
			s.kinds[id] = k
			s.order = append(s.order, id)
		}
	}
	if s.clusters == nil {
		s.clusters = ev.Clusters
	}
}

// kindWatch is one kind of one source, as a connection registers it.
type kindWatch struct {
	id     string
	object client.Object
	source *EventSource
}

// watches lists the kinds, each with an id unique across controllers.
func (s *EventSource) watches() []kindWatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]kindWatch, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, kindWatch{id: s.controller + "/" + id, object: s.kinds[id].Object, source: s})
	}
	return out
}

// Kinds returns an object of each watched kind.
func (s *EventSource) Kinds() []client.Object {
	ws := s.watches()
	out := make([]client.Object, len(ws))
	for i, w := range ws {
		out[i] = w.object
	}
	return out
}

// Object delivers an add, update or delete of obj on cluster key, if the
// source watches its kind.
func (s *EventSource) Object(ctx context.Context, key Key, obj client.Object) {
	s.mu.Lock()
	k, ok := s.kinds[kindID(obj)]
	s.mu.Unlock()
	if !ok {
		return
	}
	for _, req := range k.Map(ctx, key, obj) {
		s.requests.Send(req)
	}
}

// ClusterChanged delivers a change of key's reachability or connection.
func (s *EventSource) ClusterChanged(key Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clusters == nil {
		return
	}
	for _, k := range s.changed {
		if k == key {
			return
		}
	}
	s.changed = append(s.changed, key)
	select {
	case s.signal <- struct{}{}:
	default: // a wake-up is pending; it takes every key
	}
}

// Start starts delivering to queue, until ctx ends.
func (s *EventSource) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	if err := s.requests.Start(ctx, queue); err != nil {
		return err
	}
	go s.mapClusters(ctx)
	return nil
}

func (s *EventSource) mapClusters(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.signal:
		}
		s.mu.Lock()
		keys, f := s.changed, s.clusters
		s.changed = nil
		s.mu.Unlock()
		for _, k := range keys {
			for _, req := range f(ctx, k) {
				s.requests.Send(req)
			}
		}
	}
}

func (s *EventSource) String() string { return "remote events of " + s.controller }

// kindID names obj's Go type: a controller watches a kind once per cluster.
func kindID(obj client.Object) string { return fmt.Sprintf("%T", obj) }
