package nodeagent

import (
	"testing"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/siterecovery/siterecovery/internal/flow"
)

// A replica whose reconciles failed all through a fault (its device missing
// while pg-controller, which runs the kubelet side, was down) is retried
// within flow.MaxRetryDelay once the fault is gone, not after
// controller-runtime's default backoff, which grows to 1000 s.
func TestRetryBackoffIsCapped(t *testing.T) {
	o := controllerOptions(Config{MaxConcurrentReconciles: 4})
	if o.MaxConcurrentReconciles != 4 {
		t.Fatalf("MaxConcurrentReconciles %d, want the configured 4", o.MaxConcurrentReconciles)
	}
	rl := o.RateLimiter
	if rl == nil {
		rl = workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]() // controller-runtime's when none is given
	}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "apps", Name: "vm-vm1"}}
	for i := range 40 {
		if d := rl.When(req); d > flow.MaxRetryDelay {
			t.Fatalf("failure %d is retried after %s, more than %s", i+1, d, flow.MaxRetryDelay)
		}
	}
}
