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
	// ctx lasts as long as the connection: its cache and watches.
	ctx       context.Context
	cancel    context.CancelFunc
	threshold int
	metrics   *Metrics
	log       logr.Logger

	mu         sync.Mutex
	cacheReady bool
	last       Health
	// watched holds the ids of the watches added to this cluster's cache.
	watched map[string]bool
	// unserved holds the ids of the watches whose kind the cluster did not
	// serve when last tried.
	unserved map[string]bool
	// counted holds the kinds whose informer the metrics follow (count).
	counted map[string]bool
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
// reports whether the verdict changed. One failure is not an outage: the
// cluster is unreachable after threshold failures in a row, reachable again on
// the first success.
func (c *connection) probe(now time.Time) (changed bool) {
	start := time.Now()
	version, err := c.serverVersion()
	took := time.Since(start)
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.last
	h.LastProbeTime = now
	if err == nil {
		h.ServerVersion, h.LastSuccessTime, h.FailedProbes, h.Err = version, now, 0, nil
	} else {
		h.FailedProbes, h.Err = h.FailedProbes+1, err
	}
	h.State = h.verdict(err == nil, c.threshold)
	c.metrics.probed(c.key, took, h.Reachable())
	was := c.last.State
	c.last = h
	switch {
	case h.State == was:
		return false
	case h.State == Unreachable:
		c.log.Info("cluster unreachable", "failedProbes", h.FailedProbes, "error", err.Error())
	case was == Unreachable:
		c.log.Info("cluster reachable again")
	}
	return true
}

func (c *connection) serverVersion() (string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(c.cfg)
	if err != nil {
		return "", err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return "", err
	}
	return info.GitVersion, nil
}

// ensureWatches adds each watch this cluster's cache does not have yet. A
// kind the cluster does not serve (a CRD not installed there, such as
// csi-addons' on a DRBD-only cluster) is left unwatched rather than failing
// the connection: nothing of that kind exists there to watch. It is marked
// unserved, and retryUnserved tries it again, so that a CRD installed later
// is watched without a reconnect.
func (c *connection) ensureWatches(ws []kindWatch) error {
	for _, w := range ws {
		c.mu.Lock()
		done := c.watched[w.id]
		c.watched[w.id] = true
		c.mu.Unlock()
		if done {
			continue
		}
		err := c.addWatch(w)
		if err == nil {
			c.servedAgain(w)
			continue
		}
		c.mu.Lock()
		delete(c.watched, w.id)
		c.mu.Unlock()
		if isNotServed(err) {
			c.notServed(w, err)
			continue
		}
		return err
	}
	return nil
}

// addWatch feeds every add, update and delete of w.object in this cluster to
// the watch's source.
func (c *connection) addWatch(w kindWatch) error {
	inf, err := c.cluster.GetCache().GetInformer(c.ctx, w.object)
	if err != nil {
		return err
	}
	c.mu.Lock()
	first := !c.counted[kindID(w.object)]
	c.counted[kindID(w.object)] = true
	c.mu.Unlock()
	if first {
		if err := c.count(inf, w.object); err != nil {
			return err
		}
	}
	send := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if o, ok := obj.(client.Object); ok {
			w.source.Object(c.ctx, c.key, o)
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    send,
		UpdateFunc: func(_, obj any) { send(obj) },
		DeleteFunc: send,
	})
	return err
}
