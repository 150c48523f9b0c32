package storagearray

import (
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestStateFollowsSpecAfterDelay(t *testing.T) {
	for _, withConditions := range []bool{false, true} {
		s := runtime.NewScheme()
		require.NoError(t, replicationv1alpha1.AddToScheme(s))
		vgr := &replicationv1alpha1.VolumeGroupReplication{
			ObjectMeta: metav1.ObjectMeta{Name: "global-rg", Namespace: "ramen-system", Generation: 1},
			Spec:       replicationv1alpha1.VolumeGroupReplicationSpec{VolumeGroupReplicationClassName: "c", ReplicationState: replicationv1alpha1.Primary},
		}
		c := fake.NewClientBuilder().WithScheme(s).WithObjects(vgr).WithStatusSubresource(vgr).Build()
		clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
		r := &reconciler{client: c, opts: Options{Delay: time.Second, Conditions: withConditions, Clock: clk, Classes: []string{"c"}},
			since: map[transitionKey]time.Time{}}
		req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(vgr)}
		get := func() *replicationv1alpha1.VolumeGroupReplication {
			got := &replicationv1alpha1.VolumeGroupReplication{}
			require.NoError(t, c.Get(t.Context(), req.NamespacedName, got))
			return got
		}

		res, err := r.Reconcile(t.Context(), req)
		require.NoError(t, err)
		require.Equal(t, time.Second, res.RequeueAfter)
		require.Empty(t, get().Status.State, "no state before the delay")

		clk.SetTime(clk.Now().Add(time.Second))
		res, err = r.Reconcile(t.Context(), req)
		require.NoError(t, err)
		require.Zero(t, res.RequeueAfter)
		got := get()
		require.Equal(t, replicationv1alpha1.PrimaryState, got.Status.State)
		if withConditions {
			require.Len(t, got.Status.Conditions, 4)
		} else {
			require.Empty(t, got.Status.Conditions)
		}

		// Demotion restarts the delay.
		got.Spec.ReplicationState = replicationv1alpha1.Secondary
		require.NoError(t, c.Update(t.Context(), got))
		res, err = r.Reconcile(t.Context(), req)
		require.NoError(t, err)
		require.Equal(t, time.Second, res.RequeueAfter)
		clk.SetTime(clk.Now().Add(time.Second))
		_, err = r.Reconcile(t.Context(), req)
		require.NoError(t, err)
		require.Equal(t, replicationv1alpha1.SecondaryState, get().Status.State)
	}
}

func TestFilterByClass(t *testing.T) {
	r := &reconciler{opts: Options{Classes: []string{"mine"}}}
	mine := &replicationv1alpha1.VolumeGroupReplication{Spec: replicationv1alpha1.VolumeGroupReplicationSpec{VolumeGroupReplicationClassName: "mine"}}
	other := &replicationv1alpha1.VolumeGroupReplication{Spec: replicationv1alpha1.VolumeGroupReplicationSpec{VolumeGroupReplicationClassName: "other"}}
	require.True(t, r.handles(mine))
	require.False(t, r.handles(other))
}

// A primary ends a cycle every interval and reports it as lastSyncTime; a
// paused link ends none until it resumes; a secondary reports none.
func TestSyncEndsCyclesUntilPaused(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, replicationv1alpha1.AddToScheme(s))
	vgr := &replicationv1alpha1.VolumeGroupReplication{
		ObjectMeta: metav1.ObjectMeta{Name: "global-rg", Namespace: "ramen-system", Generation: 1},
		Spec:       replicationv1alpha1.VolumeGroupReplicationSpec{VolumeGroupReplicationClassName: "c", ReplicationState: replicationv1alpha1.Primary},
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(vgr).WithStatusSubresource(vgr).Build()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	sync := &Sync{Interval: 10 * time.Second}
	r := &reconciler{client: c, opts: Options{Clock: clk, Sync: sync}, since: map[transitionKey]time.Time{}}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(vgr)}
	reconcileAt := func(at time.Duration) (time.Duration, *metav1.Time) {
		t.Helper()
		clk.SetTime(time.Unix(1000, 0).Add(at))
		res, err := r.Reconcile(t.Context(), req)
		require.NoError(t, err)
		got := &replicationv1alpha1.VolumeGroupReplication{}
		require.NoError(t, c.Get(t.Context(), req.NamespacedName, got))
		return res.RequeueAfter, got.Status.LastSyncTime
	}

	next, last := reconcileAt(0)
	require.Equal(t, 10*time.Second, next)
	require.Equal(t, int64(1000), last.Unix(), "the first cycle ends at once")
	next, last = reconcileAt(4 * time.Second)
	require.Equal(t, 6*time.Second, next)
	require.Equal(t, int64(1000), last.Unix(), "no cycle ends before the interval")
	_, last = reconcileAt(10 * time.Second)
	require.Equal(t, int64(1010), last.Unix())

	sync.Pause()
	next, last = reconcileAt(30 * time.Second)
	require.Equal(t, int64(1010), last.Unix(), "the link is down: no cycle ends")
	require.Equal(t, time.Second, next, "a paused link is looked at again soon")
	sync.Resume()
	_, last = reconcileAt(31 * time.Second)
	require.Equal(t, int64(1031), last.Unix())

	// A secondary reports no cycle of its own.
	got := &replicationv1alpha1.VolumeGroupReplication{}
	require.NoError(t, c.Get(t.Context(), req.NamespacedName, got))
	got.Spec.ReplicationState = replicationv1alpha1.Secondary
	require.NoError(t, c.Update(t.Context(), got))
	next, last = reconcileAt(50 * time.Second)
	require.Zero(t, next)
	require.Equal(t, int64(1031), last.Unix(), "a secondary ends no cycle")
}
