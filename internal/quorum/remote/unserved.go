package remote

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// DefaultUnservedRetry is how often a connection tries again to watch kinds
// its cluster did not serve. Each try of a kind costs a discovery of its API
// group, so it is not tried on every probe; a CRD installed on a workload
// cluster is watched within this long, without a reconnect.
const DefaultUnservedRetry = time.Minute

// isNotServed reports whether err says the cluster does not serve the kind
// (no CRD, no API group or version), as opposed to a cluster that cannot be
// asked.
func isNotServed(err error) bool {
	if meta.IsNoMatchError(err) {
		return true
	}
	var failed *apiutil.ErrResourceDiscoveryFailed
	if errors.As(err, &failed) {
		errs := failed.Unwrap()
		for _, e := range errs {
			if !meta.IsNoMatchError(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	return false
}

// notServed records that w's kind is not served here. It is logged at V(1)
// the first time only: a DRBD-only cluster never serves csi-addons' kinds,
// and that is not news at every retry.
func (c *connection) notServed(w kindWatch, err error) {
	c.mu.Lock()
	first := !c.unserved[w.id]
	c.unserved[w.id] = true
	c.mu.Unlock()
	if first {
		c.log.V(1).Info("kind not served by this cluster; left unwatched and retried", "watch", w.id, "reason", err.Error())
	}
}

// servedAgain clears w's unserved mark once it is watched.
func (c *connection) servedAgain(w kindWatch) {
	c.mu.Lock()
	was := c.unserved[w.id]
	delete(c.unserved, w.id)
	c.mu.Unlock()
	if was {
		c.log.Info("kind now served by this cluster; watching it", "watch", w.id)
	}
}

// hasUnserved reports whether any watch was left unwatched as not served.
func (c *connection) hasUnserved() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.unserved) > 0
}

// retryUnserved tries the unserved kinds again every interval until ctx
// ends. The watches added here also feed their sources: the informer's
// initial list delivers every object of the new kind as an add.
func (c *connection) retryUnserved(ctx context.Context, every time.Duration, watches func() []kindWatch) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !c.hasUnserved() {
			continue
		}
		if err := c.ensureWatches(watches()); err != nil && ctx.Err() == nil {
			c.log.Error(err, "watching a remote kind")
		}
	}
}
