package flow

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordingQueue is a priority queue that records the priority of each add.
type recordingQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	got map[string]*int
}

func (q *recordingQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	for _, it := range items {
		q.got[it.Name] = o.Priority
	}
}

func (q *recordingQueue) Add(it reconcile.Request) { q.got[it.Name] = nil }

func TestWithPriority(t *testing.T) {
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	inner := handler.Funcs{
		GenericFunc: func(_ context.Context, _ event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(req("plain"))
			low := -100
			q.(priorityqueue.PriorityQueue[reconcile.Request]).AddWithOpts(priorityqueue.AddOpts{Priority: &low}, req("own"))
		},
	}
	q := &recordingQueue{got: map[string]*int{}}
	WithPriority(inner, HighPriority).Generic(context.Background(), event.GenericEvent{}, q)
	if p := q.got["plain"]; p == nil || *p != HighPriority {
		t.Errorf("plain add: priority %v, want %d", p, HighPriority)
	}
	if p := q.got["own"]; p == nil || *p != -100 {
		t.Errorf("an add with its own priority: %v, want -100 kept", p)
	}

	// Without a priority queue the handler gets the controller's queue as it is.
	fifo := workqueue.NewTypedRateLimitingQueue(
		workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer fifo.ShutDown()
	if got := (prioritized{inner: inner, priority: HighPriority}).wrap(fifo); got != fifo {
		t.Errorf("a plain queue was wrapped: %T", got)
	}
}
