package flow

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// MaxRetryDelay bounds the backoff of a request whose reconcile keeps failing.
//
// controller-runtime's default backoff doubles up to 1000 s. A request fails on
// every API call while an API server it needs is down (its status write to the
// quorum cluster first of all), so a five-second outage can push the delay to
// minutes, and the request then sleeps long after the server came back, with
// nothing on it saying why. Capped here, it resumes within MaxRetryDelay of the
// server's return.
const MaxRetryDelay = 5 * time.Second

// firstRetryDelay is the first retry of a failed reconcile; a conflict on a
// status write is usually resolved by the next read.
const firstRetryDelay = 50 * time.Millisecond

// RetryLimiter is the rate limiter of a controller whose Transient errors are
// retried: exponential from firstRetryDelay, capped at MaxRetryDelay, and reset
// when a reconcile of the request succeeds.
func RetryLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](firstRetryDelay, MaxRetryDelay)
}
