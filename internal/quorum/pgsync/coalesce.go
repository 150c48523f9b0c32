package pgsync

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// remoteEventDelay is how long a remote event (a workload copy's status, a
// VM, a cluster's reachability) waits before it wakes its group. A failover
// changes every VM of a group within moments, and each pass reads every source
// and standby VM of the group: woken once per event, a group of n VMs costs n²
// reads. While the group waits in the queue, further events of it join the
// same pass, so a burst costs one pass per delay. Changes of the quorum group
// itself and of its zone are not delayed: they carry what the copies must say.
const remoteEventDelay = 500 * time.Millisecond

// coalesced starts src with a queue that delays every request by delay.
type coalesced struct {
	source.Source
	delay time.Duration
}

func (c coalesced) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	return c.Source.Start(ctx, delayQueue{q, c.delay})
}

// delayQueue turns Add into AddAfter. The workqueue keeps one waiting entry
// per request, at the earliest time asked, so the first event of a burst sets
// when the group is evaluated and the rest join it.
type delayQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	delay time.Duration
}

func (q delayQueue) Add(r reconcile.Request) { q.AddAfter(r, q.delay) }
