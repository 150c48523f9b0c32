package flow

import (
	"context"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event is a transition a reconcile records once the status showing it is
// written.
type Event struct{ Type, Reason, Message string }

// WriteStatus writes obj's status when changed, then records events. An event
// is never recorded for a status that was not written, so the events of an
// object always match its status history. An object deleted meanwhile is not
// an error.
//
// The write is an update of the status subresource: obj carries the
// resourceVersion it was read with, so a stale read fails with a conflict and
// is retried with a fresh copy, as an optimistically locked patch would be. The
// controller computes the whole status, so an update says all a patch would,
// and it costs the API server less: no merge of a patch into the stored object,
// which for a custom resource means encoding it to JSON and decoding it again.
func WriteStatus(ctx context.Context, c client.Client, rec record.EventRecorder, obj client.Object, changed bool, events []Event) error {
	if !changed {
		return nil
	}
	if err := c.Status().Update(ctx, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, e := range events {
		rec.Event(obj, e.Type, e.Reason, e.Message)
	}
	return nil
}
