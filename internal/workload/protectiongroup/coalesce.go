package protectiongroup

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// replicaEventDelay is how long a DRBDResource or Node event, or a change of
// a group that leaves its spec alone (its own status writes), waits before it
// wakes the group. Those events only refresh status.drbd (spec.drbd comes
// with the group's spec changes, which are not delayed), and the agents
// report a failover step's replicas one by one: while the group waits in the
// queue further events of it merge into the same reconcile, so a step costs a
// few status writes of the group instead of one per replica.
const replicaEventDelay = time.Second

// sameGeneration passes the updates that GenerationChangedPredicate drops.
var sameGeneration = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld != nil && e.ObjectNew != nil && e.ObjectOld.GetGeneration() == e.ObjectNew.GetGeneration()
	},
}

// delayed makes h queue its requests after d instead of at once.
func delayed(h handler.EventHandler, d time.Duration) handler.EventHandler {
	return delayedHandler{inner: h, delay: d}
}

type delayedHandler struct {
	inner handler.EventHandler
	delay time.Duration
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h delayedHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	h.inner.Create(ctx, e, delayQueue{q, h.delay})
}

func (h delayedHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	h.inner.Update(ctx, e, delayQueue{q, h.delay})
}

func (h delayedHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.inner.Delete(ctx, e, delayQueue{q, h.delay})
}

func (h delayedHandler) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	h.inner.Generic(ctx, e, delayQueue{q, h.delay})
}

// delayQueue turns Add into AddAfter. The workqueue keeps one waiting entry
// per request, at the earliest time asked, so the first event of a burst sets
// when the group is reconciled and the rest join it.
type delayQueue struct {
	queue
	delay time.Duration
}

func (q delayQueue) Add(r reconcile.Request) { q.AddAfter(r, q.delay) }
