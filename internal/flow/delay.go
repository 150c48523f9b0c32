package flow

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// A burst of events about one object (every replica of a group changing in a
// failover step) would wake its reconcile once per event, and a reconcile that
// reads the whole group then costs n² reads. Delaying each request merges the
// burst: the workqueue keeps one waiting entry per request, at the earliest
// time asked, so the first event sets when the object is reconciled and the
// rest join it.

// Queue is the work queue of a controller-runtime controller.
type Queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// DelayQueue turns Add into AddAfter(Delay).
type DelayQueue struct {
	Queue
	Delay time.Duration
}

// Add queues r after the delay.
func (q DelayQueue) Add(r reconcile.Request) { q.AddAfter(r, q.Delay) }

// DelayedSource starts src with a queue that delays every request by delay.
func DelayedSource(src source.Source, delay time.Duration) source.Source {
	return delayedSource{Source: src, delay: delay}
}

type delayedSource struct {
	source.Source
	delay time.Duration
}

func (s delayedSource) Start(ctx context.Context, q Queue) error {
	return s.Source.Start(ctx, DelayQueue{q, s.delay})
}

// DelayedHandler makes h queue its requests after delay instead of at once.
func DelayedHandler(h handler.EventHandler, delay time.Duration) handler.EventHandler {
	return delayedHandler{inner: h, delay: delay}
}

type delayedHandler struct {
	inner handler.EventHandler
	delay time.Duration
}

func (h delayedHandler) Create(ctx context.Context, e event.CreateEvent, q Queue) {
	h.inner.Create(ctx, e, DelayQueue{q, h.delay})
}

func (h delayedHandler) Update(ctx context.Context, e event.UpdateEvent, q Queue) {
	h.inner.Update(ctx, e, DelayQueue{q, h.delay})
}

func (h delayedHandler) Delete(ctx context.Context, e event.DeleteEvent, q Queue) {
	h.inner.Delete(ctx, e, DelayQueue{q, h.delay})
}

func (h delayedHandler) Generic(ctx context.Context, e event.GenericEvent, q Queue) {
	h.inner.Generic(ctx, e, DelayQueue{q, h.delay})
}
