package remote

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// connection is one cluster's cache, clients and health.
type connection struct {
	key     Key
	cluster cluster.Cluster
	direct  client.Client
	cfg     *rest.Config
	hash    string
	cancel  context.CancelFunc
	log     logr.Logger

	mu         sync.Mutex
	cacheReady bool
	last       Health
}

func (c *connection) run(ctx context.Context) {
	go func() {
		if err := c.cluster.Start(ctx); err != nil && ctx.Err() == nil {
			c.log.Error(err, "remote cache stopped")
		}
	}()
	// WaitForCacheSync returns false only when ctx ends; informers keep retrying
	// a cluster that is down, so a late cluster still syncs.
	if c.cluster.GetCache().WaitForCacheSync(ctx) {
		c.mu.Lock()
		c.cacheReady = true
		c.mu.Unlock()
		c.log.Info("remote cache synced")
	}
}

func (c *connection) stop() { c.cancel() }

func (c *connection) synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cacheReady
}

func (c *connection) health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// probe asks the API server for its version within the configured timeout and
// reports whether reachability changed.
func (c *connection) probe(now time.Time) (changed bool) {
	h := Health{LastProbeTime: now}
	dc, err := discovery.NewDiscoveryClientForConfig(c.cfg)
	if err == nil {
		if info, verr := dc.ServerVersion(); verr == nil {
			h.Reachable, h.ServerVersion = true, info.GitVersion
		} else {
			err = verr
		}
	}
	h.Err = err
	c.mu.Lock()
	defer c.mu.Unlock()
	changed = c.last.LastProbeTime.IsZero() || c.last.Reachable != h.Reachable
	if !h.Reachable && c.last.Reachable {
		c.log.Info("cluster unreachable", "error", err.Error())
	}
	if h.Reachable && !c.last.Reachable && !c.last.LastProbeTime.IsZero() {
		c.log.Info("cluster reachable again")
	}
	c.last = h
	return changed
}

// addWatch feeds every add, update and delete of w.object in this cluster to the
// watch's sink, mapped to quorum requests.
func (c *connection) addWatch(ctx context.Context, w watch) error {
	inf, err := c.cluster.GetCache().GetInformer(ctx, w.object)
	if err != nil {
		return err
	}
	send := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		o, ok := obj.(client.Object)
		if !ok {
			return
		}
		for _, req := range w.mapFn(ctx, c.key, o) {
			w.sink(req)
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    send,
		UpdateFunc: func(_, obj any) { send(obj) },
		DeleteFunc: send,
	})
	return err
}
