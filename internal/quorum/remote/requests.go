package remote

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Requests carries reconcile requests from remote watches (or any other
// goroutine) into one controller's work queue. It is a controller-runtime
// source.
//
// Send never blocks its caller (an informer's handler), never starts a
// goroutine and never drops a request. Until the controller starts the source,
// the requests wait in a set: each distinct request once, so the set is bounded
// by the objects that exist, however many events arrive. Once started, Send
// adds to the controller's work queue, which is itself such a set.
type Requests struct {
	mu      sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	pending []reconcile.Request
	seen    map[reconcile.Request]bool
}

// NewRequests returns an empty Requests.
func NewRequests() *Requests {
	return &Requests{seen: map[reconcile.Request]bool{}}
}

// Send queues req.
func (q *Requests) Send(req reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queue != nil {
		q.queue.Add(req)
		return
	}
	if !q.seen[req] {
		q.seen[req] = true
		q.pending = append(q.pending, req)
	}
}

// Pending is how many requests wait for the controller to start.
func (q *Requests) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// Start hands the waiting requests, in the order they came, and every later
// one to queue.
func (q *Requests) Start(_ context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queue = queue
	for _, req := range q.pending {
		queue.Add(req)
	}
	q.pending, q.seen = nil, map[reconcile.Request]bool{}
	return nil
}

func (q *Requests) String() string { return "remote requests" }
