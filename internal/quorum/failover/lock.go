package failover

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// lockTTL is the Lease duration: a crashed holder blocks other failovers of the
// group for at most this long.
const lockTTL = srv1alpha1.FailoverLockTTLSeconds * time.Second

// renewEvery is how often a working holder renews its Lease.
const renewEvery = lockTTL / 5

// holderOf is the Lease holder identity of a request.
func holderOf(req *srv1alpha1.FailoverRequest) string {
	return "FailoverRequest/" + req.Name + "/" + string(req.UID)
}

// lockState is what acquire learned about the Lease.
type lockState struct {
	held   bool
	holder string
	expiry time.Time
	// keeper is set when the Lease expired but its holder has already moved
	// the group and not ended (startedMoving): it alone may take it again.
	keeper *srv1alpha1.FailoverRequest
}

// acquire takes or renews the group's Lease for req. The Lease is free when it does
// not exist, its holder is no longer working (holderDone), or it has expired and
// its holder never started moving the group. A holder that started moving the
// group keeps it however long quorum-manager was down: its Lease expires only
// because nothing ran, and another request taking over would fail it half way
// (say, with the source demoted) and then find the group where it is not.
// The holder itself always takes its own Lease back.
func (r *Reconciler) acquire(ctx context.Context, req *srv1alpha1.FailoverRequest, group string, now time.Time, holderDone func(holder string) bool) (lockState, error) {
	key := client.ObjectKey{Namespace: req.Namespace, Name: srv1alpha1.FailoverLockName(group)}
	me := holderOf(req)
	lease := &coordinationv1.Lease{}
	err := r.Client.Get(ctx, key, lease)
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: group}},
			Spec: leaseSpec(me, now, 0),
		}
		if err := r.Client.Create(ctx, lease); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return lockState{}, fmt.Errorf("lock %s was taken concurrently; retrying", key.Name)
			}
			return lockState{}, err
		}
		return lockState{held: true, holder: me}, nil
	}
	if err != nil {
		return lockState{}, err
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	expiry := leaseExpiry(lease)
	if holder != me && holder != "" && !holderDone(holder) {
		if now.Before(expiry) {
			return lockState{holder: holder, expiry: expiry}, nil
		}
		keeper, err := r.movingHolder(ctx, req.Namespace, holder)
		if err != nil {
			return lockState{}, err
		}
		if keeper != nil {
			return lockState{holder: holder, expiry: expiry, keeper: keeper}, nil
		}
	}
	if holder == me && lease.Spec.RenewTime != nil && now.Sub(lease.Spec.RenewTime.Time) < renewEvery {
		return lockState{held: true, holder: me}, nil
	}
	transitions := ptr.Deref(lease.Spec.LeaseTransitions, 0)
	if holder != me {
		transitions++
	}
	acquired := lease.Spec.AcquireTime
	lease.Spec = leaseSpec(me, now, transitions)
	if holder == me && acquired != nil {
		lease.Spec.AcquireTime = acquired
	}
	// Update carries the resourceVersion, so two requests racing for a free Lease
	// cannot both win.
	if err := r.Client.Update(ctx, lease); err != nil {
		return lockState{}, err
	}
	return lockState{held: true, holder: me}, nil
}

// release gives the Lease up if req holds it.
func (r *Reconciler) release(ctx context.Context, req *srv1alpha1.FailoverRequest, group string) error {
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: req.Namespace, Name: srv1alpha1.FailoverLockName(group)}
	if err := r.Client.Get(ctx, key, lease); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ptr.Deref(lease.Spec.HolderIdentity, "") != holderOf(req) {
		return nil
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, lease, client.Preconditions{ResourceVersion: &lease.ResourceVersion}))
}

func leaseSpec(holder string, now time.Time, transitions int32) coordinationv1.LeaseSpec {
	t := metav1.NewMicroTime(now)
	return coordinationv1.LeaseSpec{
		HolderIdentity:       &holder,
		LeaseDurationSeconds: ptr.To(int32(srv1alpha1.FailoverLockTTLSeconds)),
		AcquireTime:          &t,
		RenewTime:            &t,
		LeaseTransitions:     &transitions,
	}
}

func leaseExpiry(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Add(time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second)
}
