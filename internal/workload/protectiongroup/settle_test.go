package protectiongroup

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// Inside a window, a group in transition keeps its status; a group that
// reaches its desired state is written at once, because the quorum tier waits
// on exactly that write; and the held write goes out once the window closes.
func TestTransitionStatusSettlesButTheDesiredStateIsWrittenAtOnce(t *testing.T) {
	ctx := context.Background()
	g := &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "pg", Generation: 2},
		Spec:       srv1alpha1.ProtectionGroupSpec{DesiredState: srv1alpha1.StateStopped},
		Status:     srv1alpha1.ProtectionGroupStatus{CurrentState: srv1alpha1.StateRunning, ObservedGeneration: 1},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(g).WithStatusSubresource(g).Build()
	t0 := time.Unix(1000, 0)
	clk := clocktesting.NewFakePassiveClock(t0)
	r := &Reconciler{Client: c, Recorder: record.NewFakeRecorder(10), Clock: clk}

	write := func(now time.Time, asked bool, state srv1alpha1.GroupState) time.Duration {
		t.Helper()
		read := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(g), read))
		clk.SetTime(now) // the write's time, which the window counts from
		s := &scope{group: read, before: read.DeepCopy(), now: t0, asked: asked}
		s.group.Status.CurrentState, s.group.Status.ObservedGeneration = state, s.group.Generation
		held, err := r.writeStatus(ctx, s)
		require.NoError(t, err)
		return held
	}
	stored := func() srv1alpha1.GroupState {
		t.Helper()
		read := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(g), read))
		return read.Status.CurrentState
	}

	// The reconcile that asks the VMs to stop holds "stopping" back.
	require.Equal(t, settleWait, write(t0, true, srv1alpha1.StateStopping))
	require.Equal(t, srv1alpha1.StateRunning, stored())
	// A reconcile woken by one VM's answer, still in transition, waits out the rest.
	require.Equal(t, settleWait/2, write(t0.Add(settleWait/2), false, srv1alpha1.StateStopping))
	require.Equal(t, srv1alpha1.StateRunning, stored())
	// Once the window has closed, the transition is reported.
	require.Zero(t, write(t0.Add(settleWait), false, srv1alpha1.StateStopping))
	require.Equal(t, srv1alpha1.StateStopping, stored())

	// Reaching the desired state is written at once, inside a fresh window.
	t1 := t0.Add(time.Minute)
	require.Equal(t, settleWait, write(t1, true, srv1alpha1.StateRunning), "the ask opens a window")
	require.Zero(t, write(t1.Add(time.Millisecond), true, srv1alpha1.StateStopped))
	require.Equal(t, srv1alpha1.StateStopped, stored())

	// The next transition holds its first write again: the hold that ended
	// with that write does not count against it.
	t2 := t1.Add(time.Minute)
	require.Equal(t, settleWait, write(t2, true, srv1alpha1.StateStopping))
	require.Equal(t, srv1alpha1.StateStopped, stored())
}
