package remote

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Requests carries reconcile requests from remote watches (or any other
// goroutine) into one controller's work queue.
type Requests struct {
	ch chan event.GenericEvent
}

// NewRequests returns a Requests with room for size pending requests.
func NewRequests(size int) *Requests {
	return &Requests{ch: make(chan event.GenericEvent, size)}
}

// Send queues req. It never blocks the informer that calls it and never drops a
// request: when the buffer is full, the send waits in its own goroutine.
func (q *Requests) Send(req reconcile.Request) {
	ev := event.GenericEvent{Object: &metav1.PartialObjectMetadata{
		ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}}
	select {
	case q.ch <- ev:
	default:
		go func() { q.ch <- ev }()
	}
}

// Source is the controller-runtime source that delivers the queued requests.
func (q *Requests) Source() source.Source {
	return source.Channel(q.ch, &handler.EnqueueRequestForObject{})
}

// SourceMapped delivers each queued request through mapFn instead, for requests
// that name another kind than the controller's (e.g. a zone whose groups to
// reconcile).
func (q *Requests) SourceMapped(mapFn handler.MapFunc) source.Source {
	return source.Channel(q.ch, handler.EnqueueRequestsFromMapFunc(mapFn))
}

var _ client.Object = &metav1.PartialObjectMetadata{}
