package boot

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// NewInformer is the informer of every siterecovery cache (cache.Options'
// NewInformer): client-go's, whose lists and watches wait for an API server
// that refuses connections instead of failing. A reflector whose list fails
// retries on an exponential backoff that grows to 30 s (with jitter, up to a
// minute) over an outage, so a cache would go on showing the cluster as it
// was before an API server restart for that long after the server came back,
// and nothing watching it would wake. Waiting here, the reflector's backoff
// does not grow: the list goes through within patientRetry of the server's
// return.
func NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformerWithOptions(patient{toolscache.ToListerWatcherWithContext(lw)}, obj,
		toolscache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers})
}

// patientRetry is how often a list or watch is tried again while the API
// server refuses connections: each try costs a refused connection only.
const patientRetry = 250 * time.Millisecond

// patient retries lists and watches while the API server is down.
type patient struct {
	lw toolscache.ListerWatcherWithContext
}

func (p patient) List(options metav1.ListOptions) (runtime.Object, error) {
	return p.ListWithContext(context.Background(), options)
}

func (p patient) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return p.WatchWithContext(context.Background(), options)
}

func (p patient) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	return retryWhileDown(ctx, func() (runtime.Object, error) { return p.lw.ListWithContext(ctx, options) })
}

func (p patient) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return retryWhileDown(ctx, func() (watch.Interface, error) { return p.lw.WatchWithContext(ctx, options) })
}

// retryWhileDown calls f until it does not fail with a refused or dropped
// connection, or ctx ends; any other error is the caller's.
func retryWhileDown[T any](ctx context.Context, f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if err == nil || !serverDown(err) || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(patientRetry):
		}
	}
}

// serverDown reports whether err says the API server is not there: nothing
// listens on its address, or it dropped the connection.
func serverDown(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}
