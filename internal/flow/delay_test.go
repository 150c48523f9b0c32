package flow

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A burst of events for one object is one reconcile, after the delay.
func TestDelayQueueMergesABurst(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	d := DelayQueue{q, 50 * time.Millisecond}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "dr", Name: "pg"}}
	for range 20 {
		d.Add(req)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("%d requests queued at once, want them delayed", n)
	}
	got, _ := q.Get() // blocks until the delay passed
	q.Done(got)
	if got != req {
		t.Fatalf("got %v", got)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("%d more evaluations queued, want the burst merged into one", n)
	}
}
