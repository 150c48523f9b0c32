package flow

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event is a transition a reconcile records once the status showing it is
// written.
type Event struct{ Type, Reason, Message string }

// StatusWriter is the one way a controller writes a status: an update of the
// status subresource carrying the resourceVersion the object was read with,
// optionally paced per object by a Pacer (a Throttle, a Settle or a Coalescer).
//
// The update is an optimistic lock: a stale read fails with a conflict and is
// retried with a fresh copy, so a write never overwrites what another reconcile
// wrote meanwhile (an allocation, a currentState). The controller computes the
// whole status, so an update says all a patch would, and it costs the API
// server less: no merge of a patch into the stored object, which for a custom
// resource means encoding it to JSON and decoding it again.
//
// Events are recorded only after the write succeeded, so the events of an
// object always match its status history. An object deleted meanwhile is not
// an error.
type StatusWriter struct {
	client   client.Client
	recorder record.EventRecorder
	clock    clock.PassiveClock
	pacer    Pacer
}

// StatusOption configures a StatusWriter.
type StatusOption func(*StatusWriter)

// WithPacer paces the writes per object with p.
func WithPacer(p Pacer) StatusOption { return func(w *StatusWriter) { w.pacer = p } }

// WithClock sets the clock pacing decisions use; the real clock by default.
func WithClock(c clock.PassiveClock) StatusOption { return func(w *StatusWriter) { w.clock = c } }

// NewStatusWriter returns a writer that records events with rec (nil: none).
func NewStatusWriter(c client.Client, rec record.EventRecorder, opts ...StatusOption) *StatusWriter {
	w := &StatusWriter{client: c, recorder: rec, clock: clock.RealClock{}}
	for _, o := range opts {
		o(w)
	}
	return w
}

// Change is a status a reconcile computed, for a StatusWriter to write.
//
// What a pacer decides on beyond Changed sits in one field of its own type,
// which only that pacer reads: Progress for a Throttle, Settling for a Settle
// (and its next pacer's field beside it), Statuses for a Coalescer. A
// reconciler fills the fields of the pacers its writer was built with.
type Change struct {
	// Changed reports whether the status differs from the one read. A
	// Coalescer decides from Statuses instead.
	Changed bool
	// Events to record once the status is written.
	Events []Event
	// At is when the reconcile computed the change, for the pacer; the
	// writer's clock when zero.
	At time.Time

	// Progress is a Throttle's option (throttle.go).
	Progress Progress
	// Settling is a Settle's option (settle.go).
	Settling Settling
	// Statuses is a Coalescer's option (coalescer.go).
	Statuses Statuses
}

// Written is the outcome of a Write.
type Written struct {
	// Wrote reports whether the status was written.
	Wrote bool
	// Hold > 0: the pacer held the change back; reconcile again after Hold so
	// that the then-current status is written and no change is lost.
	Hold time.Duration
}

// Write writes obj's status as c describes.
func (w *StatusWriter) Write(ctx context.Context, obj client.Object, c Change) (Written, error) {
	key := client.ObjectKeyFromObject(obj).String()
	now := c.At
	if now.IsZero() {
		now = w.clock.Now()
	}
	if w.pacer != nil {
		write, hold := w.pacer.Decide(key, c, now)
		if !write {
			return Written{Hold: hold}, nil
		}
	} else if !c.Changed {
		return Written{}, nil
	}
	if err := w.client.Status().Update(ctx, obj); err != nil {
		return Written{}, client.IgnoreNotFound(err)
	}
	if w.pacer != nil {
		w.pacer.Written(key, c, now)
	}
	if w.recorder != nil {
		for _, e := range c.Events {
			w.recorder.Event(obj, e.Type, e.Reason, e.Message)
		}
	}
	return Written{Wrote: true}, nil
}

// Forget drops what the pacer knows of key, once its object is gone.
func (w *StatusWriter) Forget(key string) {
	if w.pacer != nil {
		w.pacer.Forget(key)
	}
}

// WriteStatus writes obj's status when changed, then records events: a
// StatusWriter without a pacer, for a single write.
func WriteStatus(ctx context.Context, c client.Client, rec record.EventRecorder, obj client.Object, changed bool, events []Event) error {
	_, err := NewStatusWriter(c, rec).Write(ctx, obj, Change{Changed: changed, Events: events})
	return err
}

// Pacer decides per object key whether a status change is written now.
type Pacer interface {
	// Decide reports whether to write c at now; when not, hold > 0 says how
	// long the change must wait, and zero that there is nothing to write.
	Decide(key string, c Change, now time.Time) (write bool, hold time.Duration)
	// Written records that c was written at now.
	Written(key string, c Change, now time.Time)
	// Forget drops key.
	Forget(key string)
}

// PatchStatus writes the status fields a controller owns on an object whose
// status another controller writes whole (a group's history, its stand-down
// conditions): change alters obj, and only what it altered goes out, as a
// merge patch carrying the resourceVersion obj was read with. A stale read
// fails with a conflict and is retried with a fresh copy, so the other
// writer's fields are never overwritten. Events are recorded once the patch
// succeeded. It reports whether it wrote; a change that alters nothing writes
// nothing, and an object deleted meanwhile is not an error.
func PatchStatus[T client.Object](ctx context.Context, c client.Client, rec record.EventRecorder, obj T, change func(T), events ...Event) (bool, error) {
	before, ok := obj.DeepCopyObject().(T)
	if !ok {
		return false, fmt.Errorf("copying %T: the copy is of another type", obj)
	}
	change(obj)
	if equality.Semantic.DeepEqual(before, obj) {
		return false, nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if rec != nil {
		for _, e := range events {
			rec.Event(obj, e.Type, e.Reason, e.Message)
		}
	}
	return true, nil
}
