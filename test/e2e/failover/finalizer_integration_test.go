package failover_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// Deleting a request that has moved no DRBD role stops it at a safe point: a
// queued request goes at once; one whose source is stopping puts the group back
// on its source first. Either way the outcome stays in the group's history.
func TestDeletingAnUnstartedRequestLeavesTheGroupOnItsSource(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 1, vmStopDelay: time.Hour})
	q := z.Client(env.Quorum)

	t.Run("pending", func(t *testing.T) {
		// Someone else holds the group's lock, so the request queues in Pending.
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: srv1alpha1.FailoverLockName(group)},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("maintenance-window"), LeaseDurationSeconds: ptr.To[int32](3600),
				AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}
		require.NoError(t, q.Create(z.ctx, lease))
		name := z.failover("queued", env.DR, srv1alpha1.FailoverPlanned)
		z.waitFinalizer(name)
		z.waitPhase(name, srv1alpha1.FailoverPending)
		require.NoError(t, q.Delete(z.ctx, &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name}}))
		z.waitGone(name)
		rec := z.historyOf(name)
		require.Equal(t, string(srv1alpha1.FailoverFailed), rec.Outcome)
		require.Equal(t, srv1alpha1.ReasonCancelled, rec.Reason)
		require.Contains(t, rec.Message, "deleted in phase Pending")
		held := &coordinationv1.Lease{}
		require.NoError(t, q.Get(z.ctx, client.ObjectKeyFromObject(lease), held))
		require.Equal(t, "maintenance-window", *held.Spec.HolderIdentity, "another holder's lock is not touched")
		require.NoError(t, q.Delete(z.ctx, held))
	})

	t.Run("stopping on source", func(t *testing.T) {
		name := z.failover("stopping", env.DR, srv1alpha1.FailoverPlanned)
		z.waitPhase(name, srv1alpha1.FailoverStoppingOnSource)
		pg := &srv1alpha1.ProtectionGroup{}
		key := types.NamespacedName{Namespace: env.Namespace, Name: group}
		env.Eventually(t, timeout, "the source asked to stop", func() error {
			require.NoError(t, z.Client(env.Primary).Get(z.ctx, key, pg))
			if pg.Spec.DesiredState != srv1alpha1.StateStopped {
				return errPending
			}
			return nil
		})
		require.NoError(t, q.Delete(z.ctx, &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name}}))
		z.waitGone(name)
		require.NoError(t, z.Client(env.Primary).Get(z.ctx, key, pg))
		require.Equal(t, srv1alpha1.StateRunning, pg.Spec.DesiredState, "the group is asked to run on its source again")
		rec := z.historyOf(name)
		require.Equal(t, srv1alpha1.ReasonCancelled, rec.Reason)
		require.Contains(t, rec.Message, "asked to run on primary-cluster again")
		require.Equal(t, "Secondary", z.drbd(env.DR, z.vms[0]).Status.Role, "nothing was promoted")
		z.assertActive(env.Primary)
		z.assertLockReleased()
	})
}

// A request deleted after the target was promoted runs on to its end: the group
// is started on the target, and the request goes once its outcome is recorded.
func TestDeletingAPromotedRequestFinishesIt(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 1, vmStartDelay: 3 * time.Second})
	name := z.failover("promoted", env.DR, srv1alpha1.FailoverPlanned)
	z.waitPhase(name, srv1alpha1.FailoverStartingOnTarget)
	require.NoError(t, z.Client(env.Quorum).Delete(z.ctx, &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name}}))
	z.waitGone(name)
	rec := z.historyOf(name)
	require.Equal(t, string(srv1alpha1.FailoverCompleted), rec.Outcome)
	require.Equal(t, env.Primary, rec.SourceCluster)
	require.Equal(t, env.DR, rec.TargetCluster)
	require.NotEmpty(t, rec.Phases, "the record keeps the phase timeline")
	z.assertActive(env.DR)
	z.waitGroup(env.DR, srv1alpha1.StateRunning)
	z.assertLockReleased()
}

func (z *zone) waitFinalizer(name string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, name+" has its finalizer", func() error {
		for _, f := range z.request(name).Finalizers {
			if f == srv1alpha1.FailoverRequestFinalizer {
				return nil
			}
		}
		return errPending
	})
}

func (z *zone) waitGone(name string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, name+" deleted", func() error {
		err := z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, &srv1alpha1.FailoverRequest{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errPending
	})
}

// historyOf returns the group's history record of the request called name.
func (z *zone) historyOf(name string) srv1alpha1.RequestRecord {
	z.t.Helper()
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(z.t, z.Client(env.Quorum).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: group}, pg))
	for _, rec := range pg.Status.History {
		if rec.Name == name {
			return rec
		}
	}
	z.t.Fatalf("group %s has no history record of %s: %+v", group, name, pg.Status.History)
	return srv1alpha1.RequestRecord{}
}
