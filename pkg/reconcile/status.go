package reconcile

import (
	"context"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event is a transition a reconcile records once the status showing it is
// written.
type Event struct{ Type, Reason, Message string }

// WriteStatus patches obj's status against before when changed, then records
// events. An event is never recorded for a status that was not written, so the
// events of an object always match its status history. An object deleted
// meanwhile is not an error.
func WriteStatus(ctx context.Context, c client.Client, rec record.EventRecorder, obj, before client.Object, changed bool, events []Event) error {
	if !changed {
		return nil
	}
	// Optimistic lock: before may be a stale cached copy, and a merge patch
	// against it would leave out a field whose new value equals the stale one
	// while the server holds another. A conflict retries with a fresh copy.
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, e := range events {
		rec.Event(obj, e.Type, e.Reason, e.Message)
	}
	return nil
}
