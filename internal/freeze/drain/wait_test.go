package drain_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/freeze/drain"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// agent answers each reading asked through spec.statusRequest as a
// drbd-node-agent does, with inFlight bytes still in flight for the first
// `slow` readings and none after.
func agent(slow int) (client.Client, *int) {
	res := replica("", 4096, 0, 0, "UpToDate")
	res.ObjectMeta = metav1.ObjectMeta{Namespace: "apps", Name: "web"}
	res.Spec.Protocol = srv1alpha1.ProtocolA
	readings := 0
	c := crfake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(res).WithStatusSubresource(res).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, w client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := w.Patch(ctx, obj, p, opts...); err != nil {
				return err
			}
			r := obj.(*srv1alpha1.DRBDResource)
			readings++
			r.Status.StatusAnswered = r.Spec.StatusRequest
			if readings > slow {
				r.Status.Peers[0].APInFlightBytes = 0
			}
			return w.Status().Update(ctx, r)
		}}).Build()
	return c, &readings
}

var web = drain.Replica{Key: types.NamespacedName{Namespace: "apps", Name: "web"}, PeerNode: "dr-node", Protocol: srv1alpha1.ProtocolA}

func TestWaitAsksFreshReadingsUntilDrained(t *testing.T) {
	c, readings := agent(2)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.Empty(t, drain.Wait(ctx, c, []drain.Replica{web}))
	require.Equal(t, 3, *readings, "a protocol A replica is judged on fresh readings only, until one shows nothing in flight")
}

func TestWaitPastTheBoundNamesTheReplica(t *testing.T) {
	c, _ := agent(1 << 30)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	require.Equal(t, "apps/web: 4096 bytes of writes in flight", drain.Wait(ctx, c, []drain.Replica{web}))
}

// An agent that does not answer within the bound (stopped, or slow under
// load) is named as such, not as the bound's own deadline.
func TestWaitPastTheBoundNamesASilentAgent(t *testing.T) {
	res := replica("", 4096, 0, 0, "UpToDate")
	res.ObjectMeta = metav1.ObjectMeta{Namespace: "apps", Name: "web"}
	res.Spec.Protocol = srv1alpha1.ProtocolA
	c := crfake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(res).WithStatusSubresource(res).Build()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	require.Equal(t, "apps/web: its agent has not answered the first request for DRBD's in-flight figures", drain.Wait(ctx, c, []drain.Replica{web}))
}
