package flow

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// HighPriority is the queue priority of work that unblocks other objects: it
// runs before the routine follow-ups (priority 0) and resyncs (negative) that
// are queued at the same time.
const HighPriority = 10

// WithPriority makes h enqueue its requests at priority p when the controller
// uses controller-runtime's priority queue (the default); with another queue h
// is unchanged. A priority h sets itself (the low priority of a resync) wins.
func WithPriority(h handler.EventHandler, p int) handler.EventHandler {
	return prioritized{inner: h, priority: p}
}

type prioritized struct {
	inner    handler.EventHandler
	priority int
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h prioritized) Create(ctx context.Context, e event.CreateEvent, q queue) {
	h.inner.Create(ctx, e, h.wrap(q))
}

func (h prioritized) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	h.inner.Update(ctx, e, h.wrap(q))
}

func (h prioritized) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.inner.Delete(ctx, e, h.wrap(q))
}

func (h prioritized) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	h.inner.Generic(ctx, e, h.wrap(q))
}

func (h prioritized) wrap(q queue) queue {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return q
	}
	return priorityQueue{PriorityQueue: pq, priority: h.priority}
}

// priorityQueue adds at a default priority.
type priorityQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	priority int
}

func (q priorityQueue) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, item)
}

func (q priorityQueue) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (q priorityQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (q priorityQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		o.Priority = &q.priority
	}
	q.PriorityQueue.AddWithOpts(o, items...)
}
