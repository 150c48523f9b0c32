package flow

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A request that failed many times in a row (every status write during an
// outage) is retried within MaxRetryDelay, and a success starts it over.
func TestRetryLimiterIsCapped(t *testing.T) {
	rl := RetryLimiter()
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "dr", Name: "protect-vm1"}}
	if d := rl.When(req); d != firstRetryDelay {
		t.Fatalf("first retry after %s, want %s", d, firstRetryDelay)
	}
	var last time.Duration
	for range 100 {
		last = rl.When(req)
		if last > MaxRetryDelay {
			t.Fatalf("retry after %s, more than the cap %s", last, MaxRetryDelay)
		}
	}
	if last != MaxRetryDelay {
		t.Fatalf("after 100 failures the retry is after %s, want the cap %s", last, MaxRetryDelay)
	}
	rl.Forget(req)
	if d := rl.When(req); d != firstRetryDelay {
		t.Fatalf("after a success the first retry is after %s, want %s", d, firstRetryDelay)
	}
}
