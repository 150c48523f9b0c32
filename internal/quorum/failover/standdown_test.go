package failover

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestStandDownReturnedFencedOffCluster: the group runs on dr and records
// primary as fenced off; primary answers, its copy still running and Primary.
// The stand-down stops the group there, then demotes it, and tells both; it
// does nothing while a request holds the group's Lease.
func TestStandDownReturnedFencedOffCluster(t *testing.T) {
	c := phaseCase{
		primary: cluster{objs: []client.Object{groupCopyIn(testGroup, running, running), replica("node-a", pri, pri, false)}},
		dr:      cluster{objs: []client.Object{groupCopyIn(testGroup, running, running), replica("node-b", pri, pri, false)}}}
	setup := func(t *testing.T) (*fixture, *StandDown) {
		f := newFixture(c)
		pg := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: testGroup}, pg))
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

	t.Run("stopped, then demoted", func(t *testing.T) {
		f, r := setup(t)
		res := pass(t, f, r)
		require.Positive(t, res.RequeueAfter, "it looks again until stood down")
		require.Equal(t, stopped, f.groupCopy(t, primary).Spec.DesiredState)
		require.Equal(t, pri, f.drbd(t, primary).Spec.Role, "not demoted before its VMs stopped")
		require.Contains(t, <-f.events.Events, "stopping its VMs")

		// pg-controller reports the group stopped.
		g := f.groupCopy(t, primary)
		g.Status.CurrentState, g.Status.ObservedGeneration = stopped, g.Generation
		require.NoError(t, f.remote.Client(key(primary)).Status().Update(f.ctx, g))
		pass(t, f, r)
		require.Equal(t, sec, f.drbd(t, primary).Spec.Role)
		require.Contains(t, <-f.events.Events, "demoting its DRBD replicas to Secondary")
		require.Equal(t, running, f.groupCopy(t, drCluster).Spec.DesiredState, "the active cluster is left alone")
		require.Equal(t, pri, f.drbd(t, drCluster).Spec.Role)

		// DRBD reports the replica Secondary.
		d := f.drbd(t, primary)
		d.Status.Role = string(sec)
		require.NoError(t, f.remote.Client(key(primary)).Status().Update(f.ctx, d))
		res = pass(t, f, r)
		require.Zero(t, res.RequeueAfter)
		require.Contains(t, <-f.events.Events, "primary stood down")
	})
	t.Run("a request holding the Lease owns the group", func(t *testing.T) {
		f, r := setup(t)
		holder := "other"
		require.NoError(t, f.quorum.Create(f.ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: srv1alpha1.FailoverLockName(testGroup)},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder}}))
		pass(t, f, r)
		require.Equal(t, running, f.groupCopy(t, primary).Spec.DesiredState)
		require.Empty(t, f.events.Events)
	})
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
