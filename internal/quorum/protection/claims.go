package protection

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// claimAttempts bounds the read-pick-write rounds of one claim or release; a
// writer that keeps losing races returns a conflict and is retried with the
// controller's backoff.
const claimAttempts = 8

// orphanGrace is how much older than the list of requests an orphaned claim
// must be before it is dropped: a claim is written after its request exists,
// so a claim written before the list whose request is not in it belongs to a
// deleted request; the grace absorbs clock skew between quorum-manager
// replicas.
const orphanGrace = time.Minute

// errClaimConflict is returned when every attempt lost a race.
var errClaimConflict = errors.New("the DRBDAllocation kept changing under concurrent claims")

// allocCluster is one workload cluster's DRBDAllocation, read and written
// through the API server (never a cache: a claim must see the latest claims).
type allocCluster struct {
	name string
	c    client.Client
}

// claimer claims one port and minors for one request on every cluster of the
// replica pair, and releases them. Every write is an update carrying the
// resourceVersion of the read it was computed from, so two claimers of any DR
// namespace never both take a value: the second gets a conflict and picks
// again from the new state.
type claimer struct {
	clusters []allocCluster
	// self is the request's claim without port and minors.
	self srv1alpha1.DRBDClaim
	// inUse are ports and minors taken outside the allocations: DRBDResources
	// on the clusters and requests of the DR namespace that allocated before
	// the allocations existed.
	inUse usage
	// live are the uids of the DR namespace's requests, listed at listedAt.
	live     map[types.UID]bool
	listedAt time.Time
	now      time.Time
}

// claim returns the request's port and minors (one per volume), claimed on
// every cluster. A claim the request already holds (written before a crash)
// is reused while it is still free everywhere.
func (c *claimer) claim(ctx context.Context, volumes int) (int32, []int32, error) {
	for range claimAttempts {
		allocs, err := c.read(ctx)
		if err != nil {
			return 0, nil, err
		}
		want, ok := c.pick(allocs, volumes)
		if !ok {
			return 0, nil, errPortsExhausted
		}
		conflict := false
		for i, a := range allocs {
			if held, found := c.find(a); found && held.Port == want.Port && slices.Equal(held.Minors, want.Minors) {
				continue
			}
			c.prune(a)
			a.Spec.Claims = append(a.Spec.Claims, want)
			if err := c.clusters[i].c.Update(ctx, a); err != nil {
				if apierrors.IsConflict(err) {
					conflict = true
					break
				}
				return 0, nil, fmt.Errorf("claiming port %d on cluster %s: %w", want.Port, c.clusters[i].name, err)
			}
		}
		if !conflict {
			return want.Port, want.Minors, nil
		}
	}
	return 0, nil, errClaimConflict
}

// errPortsExhausted is returned when no port is free on the pair.
var errPortsExhausted = errors.New("every replication port is in use")

// release drops the request's claim, and the DR namespace's orphaned claims,
// from every cluster. A cluster without a DRBDAllocation holds no claim.
func (c *claimer) release(ctx context.Context) error {
	for _, cl := range c.clusters {
		if err := c.releaseOn(ctx, cl); err != nil {
			return err
		}
	}
	return nil
}

func (c *claimer) releaseOn(ctx context.Context, cl allocCluster) error {
	for range claimAttempts {
		a := &srv1alpha1.DRBDAllocation{}
		err := cl.c.Get(ctx, types.NamespacedName{Name: srv1alpha1.DRBDAllocationName}, a)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("reading DRBDAllocation %s on cluster %s: %w", srv1alpha1.DRBDAllocationName, cl.name, err)
		}
		if !c.prune(a) {
			return nil
		}
		switch err := cl.c.Update(ctx, a); {
		case err == nil:
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("releasing the claim of %s on cluster %s: %w", c.self.Request, cl.name, err)
		}
	}
	return errClaimConflict
}

// read returns every cluster's DRBDAllocation; the first claimer creates it.
func (c *claimer) read(ctx context.Context) ([]*srv1alpha1.DRBDAllocation, error) {
	out := make([]*srv1alpha1.DRBDAllocation, len(c.clusters))
	for i, cl := range c.clusters {
		a := &srv1alpha1.DRBDAllocation{}
		key := types.NamespacedName{Name: srv1alpha1.DRBDAllocationName}
		err := cl.c.Get(ctx, key, a)
		if apierrors.IsNotFound(err) {
			a = &srv1alpha1.DRBDAllocation{ObjectMeta: metav1.ObjectMeta{Name: srv1alpha1.DRBDAllocationName}}
			if err = cl.c.Create(ctx, a); apierrors.IsAlreadyExists(err) {
				err = cl.c.Get(ctx, key, a)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("reading DRBDAllocation %s on cluster %s: %w", srv1alpha1.DRBDAllocationName, cl.name, err)
		}
		out[i] = a
	}
	return out, nil
}

// pick is the claim to hold: the one already held when it has a minor per
// volume and its values are free everywhere else, otherwise the lowest free
// port and minors.
func (c *claimer) pick(allocs []*srv1alpha1.DRBDAllocation, volumes int) (srv1alpha1.DRBDClaim, bool) {
	taken := usage{ports: map[int32]bool{}, minors: map[int32]bool{}}
	for p := range c.inUse.ports {
		taken.ports[p] = true
	}
	for m := range c.inUse.minors {
		taken.minors[m] = true
	}
	for _, a := range allocs {
		for _, o := range a.Spec.Claims {
			if o.RequestUID == c.self.RequestUID || c.orphaned(o) {
				continue
			}
			taken.ports[o.Port] = true
			for _, m := range o.Minors {
				taken.minors[m] = true
			}
		}
	}
	for _, a := range allocs {
		if held, ok := c.find(a); ok && len(held.Minors) == volumes && taken.free(held) {
			return held, true
		}
	}
	want := c.self
	want.ClaimedAt = metav1.NewTime(c.now)
	port, ok := taken.freePort()
	if !ok {
		return want, false
	}
	want.Port = port
	want.Minors = make([]int32, volumes)
	for i := range want.Minors {
		want.Minors[i] = taken.takeMinor()
	}
	return want, true
}

// find returns the request's own claim in a.
func (c *claimer) find(a *srv1alpha1.DRBDAllocation) (srv1alpha1.DRBDClaim, bool) {
	for _, o := range a.Spec.Claims {
		if o.RequestUID == c.self.RequestUID {
			return o, true
		}
	}
	return srv1alpha1.DRBDClaim{}, false
}

// prune removes the request's own claim and the DR namespace's orphaned claims
// from a; it reports whether anything was removed.
func (c *claimer) prune(a *srv1alpha1.DRBDAllocation) bool {
	n := len(a.Spec.Claims)
	a.Spec.Claims = slices.DeleteFunc(a.Spec.Claims, func(o srv1alpha1.DRBDClaim) bool {
		return o.RequestUID == c.self.RequestUID || c.orphaned(o)
	})
	return len(a.Spec.Claims) != n
}

// orphaned reports whether o belongs to a request of this DR namespace that no
// longer exists. Claims of other DR namespaces are never judged here: only
// their own quorum-manager knows their requests.
func (c *claimer) orphaned(o srv1alpha1.DRBDClaim) bool {
	return o.DRNamespace == c.self.DRNamespace && !c.live[types.UID(o.RequestUID)] &&
		o.ClaimedAt.Time.Before(c.listedAt.Add(-orphanGrace))
}

// free reports whether every value of the claim is free in u.
func (u usage) free(cl srv1alpha1.DRBDClaim) bool {
	if u.ports[cl.Port] {
		return false
	}
	for _, m := range cl.Minors {
		if u.minors[m] {
			return false
		}
	}
	return true
}
