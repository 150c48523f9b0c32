package failover

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// TestStandDownReturnedFencedOffCluster: the group runs on dr and records
// primary as fenced off; primary answers, its copy still running and Primary.
// The stand-down stops the group there, then demotes it, and says so in the
// group's StoodDown condition and in events; it does nothing while a request
// holds the group's Lease.
func TestStandDownReturnedFencedOffCluster(t *testing.T) {
	c := phaseCase{
		primary: cluster{objs: []client.Object{groupCopyIn(testGroup, running, running), replica("node-a", pri, pri, false)}},
		dr:      cluster{objs: []client.Object{groupCopyIn(testGroup, running, running), replica("node-b", pri, pri, false)}}}
	setup := func(t *testing.T, c phaseCase) (*fixture, *StandDown) {
		f := newFixture(c)
		pg := f.quorumGroup(t)
		pg.Spec.ActiveCluster = drCluster
		pg.Annotations = map[string]string{srv1alpha1.FencedOffAnnotation: primary}
		require.NoError(t, f.quorum.Update(f.ctx, pg))
		return f, &StandDown{Client: f.quorum, APIReader: f.quorum, Remote: f.remote, Recorder: f.events}
	}
	pass := func(t *testing.T, f *fixture, r *StandDown) ctrl.Result {
		t.Helper()
		f.pgControllers(t)
		res, err := r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testNS, Name: testGroup}})
		require.NoError(t, err)
		f.pgControllers(t)
		return res
	}
	// standDown runs the stand-down to its end, as the clusters report it.
	standDown := func(t *testing.T, f *fixture, r *StandDown) {
		t.Helper()
		res := pass(t, f, r)
		require.Positive(t, res.RequeueAfter, "it looks again until stood down")
		require.Equal(t, stopped, f.groupCopy(t, primary).Spec.DesiredState)
		require.Equal(t, pri, f.drbd(t, primary).Spec.Role, "not demoted before its VMs stopped")
		require.Contains(t, <-f.events.Events, "stopping its VMs")
		cond := f.stoodDown(t)
		require.Equal(t, metav1.ConditionFalse, cond.Status)
		require.Equal(t, srv1alpha1.ReasonStandingDown, cond.Reason)
		require.Contains(t, cond.Message, "waiting for group g to stop there")

		// pg-controller reports the group stopped.
		g := f.groupCopy(t, primary)
		g.Status.CurrentState, g.Status.ObservedGeneration = stopped, g.Generation
		require.NoError(t, f.remote.Client(key(primary)).Status().Update(f.ctx, g))
		pass(t, f, r)
		require.Equal(t, sec, f.drbd(t, primary).Spec.Role)
		require.Contains(t, <-f.events.Events, "demoting its DRBD replicas to Secondary")
		require.Equal(t, running, f.groupCopy(t, drCluster).Spec.DesiredState, "the active cluster is left alone")
		require.Equal(t, pri, f.drbd(t, drCluster).Spec.Role)
		cond = f.stoodDown(t)
		require.Equal(t, srv1alpha1.ReasonStandingDown, cond.Reason)
		require.Contains(t, cond.Message, "waiting for its DRBD replicas to become Secondary")

		// DRBD reports the replica Secondary.
		d := f.drbd(t, primary)
		d.Status.Role = string(sec)
		require.NoError(t, f.remote.Client(key(primary)).Status().Update(f.ctx, d))
		res = pass(t, f, r)
		require.Zero(t, res.RequeueAfter)
		require.Contains(t, <-f.events.Events, "Normal StoodDown primary stood down")
		cond = f.stoodDown(t)
		require.Equal(t, metav1.ConditionTrue, cond.Status)
		require.Equal(t, srv1alpha1.ReasonStoodDown, cond.Reason)
		for _, want := range []string{"does not rejoin by itself", "planned FailoverRequest to primary", srv1alpha1.DiscardDivergedAnnotation + "=" + testGroup} {
			require.Contains(t, cond.Message, want, "the condition gives the way back")
		}
	}

	t.Run("stopped, then demoted", func(t *testing.T) {
		f, r := setup(t, c)
		standDown(t, f, r)
	})
	t.Run("told once, also across a restart, and never rejoined by itself", func(t *testing.T) {
		f, r := setup(t, c)
		standDown(t, f, r)
		before := f.versions(t)
		pass(t, f, r)
		pass(t, f, &StandDown{Client: f.quorum, APIReader: f.quorum, Remote: f.remote, Recorder: f.events})
		require.Empty(t, f.events.Events, "the Normal event went with the write that turned the condition True")
		require.Equal(t, metav1.ConditionTrue, f.stoodDown(t).Status)
		require.Equal(t, before, f.versions(t), "a stood-down cluster is asked nothing more, and the active one nothing at all")
	})
	t.Run("not reached yet", func(t *testing.T) {
		c := c
		c.primary.state = remote.Unreachable
		f, r := setup(t, c)
		before := f.versions(t)
		res := pass(t, f, r)
		require.Positive(t, res.RequeueAfter)
		cond := f.stoodDown(t)
		require.Equal(t, srv1alpha1.ReasonStandingDown, cond.Reason)
		require.Contains(t, cond.Message, "waiting for primary, fenced off during an unplanned failover, to answer")
		require.Equal(t, before, f.versions(t))
		require.Empty(t, f.events.Events)
	})
	t.Run("a stale write conflicts and is retried", func(t *testing.T) {
		f, r := setup(t, c)
		// Between the stand-down's read and its write, pg-sync writes Synced.
		r.APIReader = &interleaved{Reader: f.quorum, between: func() {
			pg := f.quorumGroup(t)
			meta.SetStatusCondition(&pg.Status.Conditions, metav1.Condition{Type: srv1alpha1.ConditionSynced, Status: metav1.ConditionTrue, Reason: srv1alpha1.ReasonInSync, Message: "2 clusters in sync"})
			require.NoError(t, f.quorum.Status().Update(f.ctx, pg))
		}}
		f.pgControllers(t)
		_, err := r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testNS, Name: testGroup}})
		require.True(t, apierrors.IsConflict(err), "a write from a stale read conflicts: %v", err)
		require.Nil(t, meta.FindStatusCondition(f.quorumGroup(t).Status.Conditions, srv1alpha1.ConditionStoodDown))
		r.APIReader = f.quorum
		pass(t, f, r)
		conds := f.quorumGroup(t).Status.Conditions
		require.NotNil(t, meta.FindStatusCondition(conds, srv1alpha1.ConditionStoodDown), "the retry writes it")
		require.NotNil(t, meta.FindStatusCondition(conds, srv1alpha1.ConditionSynced), "and keeps what the other writer set")
	})
	t.Run("the operator removes the record", func(t *testing.T) {
		f, r := setup(t, c)
		pass(t, f, r) // under way: the group is being stopped on primary
		<-f.events.Events
		require.NotNil(t, f.stoodDown(t))
		pg := f.quorumGroup(t)
		delete(pg.Annotations, srv1alpha1.FencedOffAnnotation)
		require.NoError(t, f.quorum.Update(f.ctx, pg))
		before := f.versions(t)
		pass(t, f, r)
		require.Nil(t, meta.FindStatusCondition(f.quorumGroup(t).Status.Conditions, srv1alpha1.ConditionStoodDown), "the condition goes with the record")
		require.Equal(t, before, f.versions(t), "nothing more is asked of either cluster")
		require.Empty(t, f.events.Events)
		api := &countingReader{Reader: f.quorum}
		r.APIReader = api
		pass(t, f, r)
		require.Zero(t, api.reads, "and the group is decided from the cache again")
	})
	t.Run("a request holding the Lease owns the group", func(t *testing.T) {
		f, r := setup(t, c)
		holder := "other"
		require.NoError(t, f.quorum.Create(f.ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: srv1alpha1.FailoverLockName(testGroup)},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder}}))
		pass(t, f, r)
		require.Equal(t, running, f.groupCopy(t, primary).Spec.DesiredState)
		require.Empty(t, f.events.Events)
		require.Nil(t, meta.FindStatusCondition(f.quorumGroup(t).Status.Conditions, srv1alpha1.ConditionStoodDown))
	})
}

func (f *fixture) quorumGroup(t *testing.T) *srv1alpha1.ProtectionGroup {
	t.Helper()
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: testGroup}, pg))
	return pg
}

func (f *fixture) stoodDown(t *testing.T) *metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(f.quorumGroup(t).Status.Conditions, srv1alpha1.ConditionStoodDown)
	require.NotNil(t, c, "the group has a StoodDown condition")
	return c
}

// versions maps each workload object of the group to its spec: what is asked
// of each cluster.
func (f *fixture) versions(t *testing.T) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, name := range []string{primary, drCluster} {
		if f.remote.Client(key(name)) == nil {
			continue
		}
		out[name+"/group"] = f.groupCopy(t, name).Spec
		out[name+"/drbd"] = f.drbd(t, name).Spec
	}
	return out
}

// interleaved runs between after its first Get, as another writer would
// between a read and the write that follows it.
type interleaved struct {
	client.Reader
	between func()
	done    bool
}

func (r *interleaved) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Reader.Get(ctx, key, obj, opts...)
	if !r.done {
		r.done = true
		r.between()
	}
	return err
}

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	reads int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads++
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.reads++
	return c.Reader.List(ctx, list, opts...)
}

// TestStandDownReadsNothingForGroupsFencingNothingOff: a replica event of a
// group that records no fenced-off cluster is answered from the cache, with
// no read of the quorum API server; a group that records one is still read
// through it.
func TestStandDownReadsNothingForGroupsFencingNothingOff(t *testing.T) {
	f := newFixture(phaseCase{
		primary: cluster{objs: []client.Object{groupCopyIn(testGroup, running, running), replica("node-a", pri, pri, false)}},
		dr:      cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), replica("node-b", sec, sec, false)}}})
	api := &countingReader{Reader: f.quorum}
	r := &StandDown{Client: f.quorum, APIReader: api, Remote: f.remote, Recorder: f.events}
	wake := func() {
		t.Helper()
		_, err := r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testNS, Name: testGroup}})
		require.NoError(t, err)
	}
	for range 5 {
		wake()
	}
	require.Zero(t, api.reads, "a group fencing nothing off is decided from the cache")
	_, err := r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testNS, Name: "gone"}})
	require.NoError(t, err)
	require.Zero(t, api.reads, "nor is a group that is gone read")

	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: testGroup}, pg))
	pg.Spec.ActiveCluster = drCluster
	pg.Annotations = map[string]string{srv1alpha1.FencedOffAnnotation: primary}
	require.NoError(t, f.quorum.Update(f.ctx, pg))
	wake()
	require.Positive(t, api.reads, "a fenced-off group is decided on what the API server has")
}
