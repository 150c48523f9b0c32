package failover

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

type testQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// newTestQueue starts src into a work queue of the test's.
func newTestQueue(t *testing.T, src source.Source) testQueue {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); q.ShutDown() })
	require.NoError(t, src.Start(ctx, q))
	return testQueue{q}
}

func (q testQueue) next(t *testing.T) reconcile.Request {
	require.Positive(t, q.Len(), "no request was queued")
	r, _ := q.Get()
	q.Done(r)
	return r
}
