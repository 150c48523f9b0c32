package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/siterecovery/siterecovery/internal/kubeconfig"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// ClusterCache is an in-memory remote.Connector.
type ClusterCache struct {
	scheme *runtime.Scheme

	mu       sync.Mutex
	clusters map[remote.Key]*cluster
	sources  map[string]*remote.EventSource
}

type cluster struct {
	client client.WithWatch
	health remote.Health
	synced bool
}

var _ remote.Connector = &ClusterCache{}

// New returns a ClusterCache without clusters; Add adds them.
func New(scheme *runtime.Scheme) *ClusterCache {
	return &ClusterCache{scheme: scheme, clusters: map[remote.Key]*cluster{}, sources: map[string]*remote.EventSource{}}
}

// Add makes key a reachable, synced cluster holding objs and returns its
// client. Every write through that client, the test's own included, is
// delivered to the event sources that watch the object's kind.
func (f *ClusterCache) Add(key remote.Key, objs ...client.Object) client.Client {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	c := &cluster{synced: true, health: remote.Health{State: remote.Reachable, ServerVersion: "v1.fake",
		LastProbeTime: now, LastSuccessTime: now}}
	c.client = newClient(f.scheme, f.deliverWrites(key), objs)
	f.clusters[key] = c
	return c.client
}

// Client is key's client; nil for a cluster never added.
func (f *ClusterCache) Client(key remote.Key) client.Client {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.clusters[key]; c != nil {
		return c.client
	}
	return nil
}

// SetState gives key the verdict a prober would reach and tells the event
// sources, as a change of reachability does.
func (f *ClusterCache) SetState(key remote.Key, state remote.State) {
	f.mu.Lock()
	c := f.clusters[key]
	if c == nil {
		f.mu.Unlock()
		panic(fmt.Sprintf("fake: SetState of cluster %s, which was never added", key))
	}
	now := time.Now()
	h := remote.Health{State: state, ServerVersion: c.health.ServerVersion, LastProbeTime: now, LastSuccessTime: c.health.LastSuccessTime}
	switch state {
	case remote.Reachable:
		h.LastSuccessTime = now
	case remote.Unreachable:
		h.FailedProbes = remote.DefaultFailureThreshold
		h.Err = fmt.Errorf("Get \"https://%s.invalid/version\": connection refused", key.Cluster)
	}
	c.health = h
	f.mu.Unlock()
	f.clusterChanged(key)
}

// SetSynced makes Get of key fail with remote.ErrNotConnected while its cache
// is not synced; Health is unaffected.
func (f *ClusterCache) SetSynced(key remote.Key, synced bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.clusters[key]; c != nil {
		c.synced = synced
	}
}

// Get implements remote.ClusterCache. Like the Manager's, it does not look at
// reachability: an unreachable cluster's Cached reader answers with what it
// holds (a real cache's last view) and its Direct client fails.
func (f *ClusterCache) Get(key remote.Key) (*remote.Remote, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.clusters[key]
	switch {
	case c == nil || c.health.State == remote.NotConnected:
		return nil, fmt.Errorf("%w: %s has no connection (is it in the zone, with a valid kubeconfig Secret?)", remote.ErrNotConnected, key.Cluster)
	case !c.synced:
		return nil, fmt.Errorf("%w: %s cache has not synced yet", remote.ErrNotConnected, key.Cluster)
	}
	return &remote.Remote{Key: key, Cached: c.client, Direct: f.direct(key, c.client)}, nil
}

// Health implements remote.ClusterCache.
func (f *ClusterCache) Health(key remote.Key) remote.Health {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.clusters[key]; c != nil {
		return c.health
	}
	return remote.Health{State: remote.NotConnected}
}

// Source implements remote.ClusterCache.
func (f *ClusterCache) Source(controller string, ev remote.Events) source.Source {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.sources[controller]; ok {
		s.Add(ev)
		return s
	}
	s := remote.NewEventSource(controller, ev)
	f.sources[controller] = s
	return s
}

// EventSource is the source a controller registered, for a test to start with
// a work queue of its own; nil if none.
func (f *ClusterCache) EventSource(controller string) *remote.EventSource {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sources[controller]
}

// Connect implements remote.Connector: it checks the kubeconfig as the Manager
// does and adds the cluster, empty and connecting, if it was not added.
func (f *ClusterCache) Connect(_ context.Context, key remote.Key, data []byte, limits remote.Limits) error {
	if _, err := kubeconfig.RESTConfig(data, limits); err != nil {
		return err
	}
	f.mu.Lock()
	c := f.clusters[key]
	f.mu.Unlock()
	if c == nil {
		f.Add(key)
		f.mu.Lock()
		f.clusters[key].health = remote.Health{State: remote.Connecting}
		f.mu.Unlock()
	}
	return nil
}

// Disconnect implements remote.Connector: the cluster keeps its objects, for
// a later Add-less Connect, but is not connected.
func (f *ClusterCache) Disconnect(key remote.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.clusters[key]; c != nil {
		c.health = remote.Health{State: remote.NotConnected}
	}
}

// Clusters implements remote.Connector.
func (f *ClusterCache) Clusters(namespace, zone string) []remote.Key {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []remote.Key
	for k, c := range f.clusters {
		if k.Namespace == namespace && k.Zone == zone && c.health.State != remote.NotConnected {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Cluster < keys[j].Cluster })
	return keys
}

// Trigger delivers an event of obj on key to every source watching its kind,
// as if it had changed there.
func (f *ClusterCache) Trigger(ctx context.Context, key remote.Key, obj client.Object) {
	typed, err := f.typed(obj)
	if err != nil {
		panic(fmt.Sprintf("fake: %v", err))
	}
	for _, s := range f.eventSources() {
		s.Object(ctx, key, typed)
	}
}

func (f *ClusterCache) clusterChanged(key remote.Key) {
	for _, s := range f.eventSources() {
		s.ClusterChanged(key)
	}
}

func (f *ClusterCache) eventSources() []*remote.EventSource {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := make([]string, 0, len(f.sources))
	for n := range f.sources {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*remote.EventSource, len(names))
	for i, n := range names {
		out[i] = f.sources[n]
	}
	return out
}

// typed is obj as the Go type a watch names: writes may come as unstructured
// objects (server-side apply).
func (f *ClusterCache) typed(obj client.Object) (client.Object, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj.DeepCopyObject().(client.Object), nil
	}
	gvk, err := apiutil.GVKForObject(u, f.scheme)
	if err != nil {
		return nil, err
	}
	o, err := f.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, o); err != nil {
		return nil, err
	}
	return o.(client.Object), nil
}

// deliverWrites are the interceptors of key's client: each successful write
// delivers the object as stored.
func (f *ClusterCache) deliverWrites(key remote.Key) interceptor.Funcs {
	after := func(ctx context.Context, c client.Reader, obj client.Object, deleted bool) {
		typed, err := f.typed(obj)
		if err != nil {
			return
		}
		if !deleted {
			// The stored object, not the request's: a patch or an apply sends
			// only part of it.
			_ = c.Get(ctx, client.ObjectKeyFromObject(obj), typed)
		}
		for _, s := range f.eventSources() {
			s.Object(ctx, key, typed)
		}
	}
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			after(ctx, c, obj, false)
			return nil
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := c.Update(ctx, obj, opts...); err != nil {
				return err
			}
			after(ctx, c, obj, false)
			return nil
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := c.Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			after(ctx, c, obj, false)
			return nil
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if err := c.Apply(ctx, obj, opts...); err != nil {
				return err
			}
			if applied, err := appliedObject(obj); err == nil {
				after(ctx, c, applied, false)
			}
			return nil
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := c.Delete(ctx, obj, opts...); err != nil {
				return err
			}
			after(ctx, c, obj, true)
			return nil
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := c.SubResource(sub).Update(ctx, obj, opts...); err != nil {
				return err
			}
			after(ctx, c, obj, false)
			return nil
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			after(ctx, c, obj, false)
			return nil
		},
	}
}

// appliedObject is the object a server-side apply names (kind, namespace and
// name), to be read back as stored.
func appliedObject(ac runtime.ApplyConfiguration) (client.Object, error) {
	b, err := json.Marshal(ac)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return u, nil
}
