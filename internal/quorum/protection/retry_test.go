package protection

import (
	"testing"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/siterecovery/siterecovery/internal/flow"
)

// A request whose reconciles failed all through an outage (a burst of failed
// status writes while the quorum API server was down) retries within
// flow.MaxRetryDelay once the server is back, not after controller-runtime's
// default backoff, which grows to 1000 s. One reconcile at a time stays: the
// port allocation relies on it.
func TestRetryBackoffIsCapped(t *testing.T) {
	o := controllerOptions()
	if o.MaxConcurrentReconciles != 1 {
		t.Fatalf("MaxConcurrentReconciles %d, want 1", o.MaxConcurrentReconciles)
	}
	rl := o.RateLimiter
	if rl == nil {
		// What controller-runtime uses when none is given.
		rl = workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
	}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "dr", Name: "protect-vm1"}}
	for i := range 40 {
		if d := rl.When(req); d > flow.MaxRetryDelay {
			t.Fatalf("failure %d is retried after %s, more than %s", i+1, d, flow.MaxRetryDelay)
		}
	}
}
