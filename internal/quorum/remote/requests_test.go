package remote

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "dr", Name: name}}
}

func newQueue() workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
}

// drain takes every request the queue holds.
func drain(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []string {
	var names []string
	for q.Len() > 0 {
		r, _ := q.Get()
		names = append(names, r.Name)
		q.Done(r)
		q.Forget(r)
	}
	return names
}

// A flood of events before the controller starts holds each request once,
// starts no goroutine, and loses none: the latest request for every key is
// delivered when the controller starts.
func TestRequestsBoundedBeforeStart(t *testing.T) {
	q := NewRequests()
	goroutines := runtime.NumGoroutine()
	for range 10_000 {
		for _, n := range []string{"a", "b", "c"} {
			q.Send(req(n))
		}
	}
	require.Equal(t, 3, q.Pending(), "one pending request per key, however many events")
	// 30,000 sends with no consumer: a Send that spawned a goroutine when it
	// could not deliver would leave thousands. The slack absorbs goroutines that
	// earlier tests of the package still start or end.
	require.Less(t, runtime.NumGoroutine()-goroutines, 100, "Send spawned goroutines")

	queue := newQueue()
	defer queue.ShutDown()
	require.NoError(t, q.Start(context.Background(), queue))
	require.Equal(t, []string{"a", "b", "c"}, drain(queue), "every key is delivered, in the order it first came")

	q.Send(req("d"))
	q.Send(req("d"))
	require.Equal(t, []string{"d"}, drain(queue), "after the start, requests go straight to the work queue, which dedups them")
	require.Zero(t, q.Pending())
}

func TestEventSourceMapsObjectsAndClusters(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := Key{Namespace: "dr", Zone: "zone", Cluster: "primary"}
	s := NewEventSource("test", Events{
		Kinds: []Kind{{Object: &metaObject{}, Map: func(_ context.Context, k Key, o clientObject) []reconcile.Request {
			return []reconcile.Request{req(k.Cluster + "-" + o.GetName())}
		}}},
		Clusters: ZoneRequests,
	})
	// A second registration of the same kind keeps one watch.
	s.Add(Events{Kinds: []Kind{{Object: &metaObject{}, Map: nil}}})
	require.Len(t, s.watches(), 1)

	s.Object(ctx, key, newMeta("vm-1"))
	s.ClusterChanged(key)
	s.ClusterChanged(key)
	queue := newQueue()
	defer queue.ShutDown()
	require.NoError(t, s.Start(ctx, queue))
	got := map[string]bool{}
	for len(got) < 2 {
		r, _ := queue.Get()
		got[r.Name] = true
		queue.Done(r)
	}
	require.Equal(t, map[string]bool{"primary-vm-1": true, "zone": true}, got)
}
