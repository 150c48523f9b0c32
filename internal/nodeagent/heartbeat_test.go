package nodeagent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/nodeagent"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// TestHeartbeatRenewsOncePerInterval: the agent's Lease is renewed at each
// tick of its clock, one write each, with a duration of several intervals so
// that one missed renewal does not make the agent look down.
func TestHeartbeatRenewsOncePerInterval(t *testing.T) {
	var writes atomic.Int32
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			writes.Add(1)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			writes.Add(1)
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := &nodeagent.Heartbeat{Client: c, Reader: c, Node: "n1", Interval: 10 * time.Second, Clock: clk, Log: testr.New(t)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Start(ctx) }()

	lease := func() *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: srv1alpha1.AgentHeartbeatNamespace, Name: srv1alpha1.AgentHeartbeatName("n1")}, l); err != nil {
			return nil
		}
		return l
	}
	require.Eventually(t, func() bool { return lease() != nil }, 5*time.Second, time.Millisecond, "the first renewal at start")
	l := lease()
	require.Equal(t, int32(40), *l.Spec.LeaseDurationSeconds)
	require.True(t, clk.Now().Equal(l.Spec.RenewTime.Time))
	first := l.Spec.AcquireTime.Time

	for i := 1; i <= 3; i++ {
		require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
		clk.Step(10 * time.Second)
		require.Eventually(t, func() bool { return lease().Spec.RenewTime.Time.Equal(clk.Now()) }, 5*time.Second, time.Millisecond)
	}
	require.Equal(t, int32(4), writes.Load(), "one write per renewal")
	require.True(t, first.Equal(lease().Spec.AcquireTime.Time), "the acquire time stays the agent's start")
	cancel()
	require.NoError(t, <-done)
}
