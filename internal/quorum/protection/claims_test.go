package protection

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

var claimNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newAllocClient(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.Client {
	t.Helper()
	return crfake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
}

// newClaimer is the claimer of request uid of DR namespace ns on the clusters.
func newClaimer(ns, uid string, live []string, clusters ...allocCluster) *claimer {
	c := &claimer{clusters: clusters, self: srv1alpha1.DRBDClaim{RequestUID: uid, DRNamespace: ns, Request: "protect-" + uid},
		inUse: usage{ports: map[int32]bool{}, minors: map[int32]bool{}}, live: map[types.UID]bool{types.UID(uid): true},
		listedAt: claimNow, now: claimNow}
	for _, u := range live {
		c.live[types.UID(u)] = true
	}
	return c
}

func allocation(t *testing.T, c client.Client) *srv1alpha1.DRBDAllocation {
	t.Helper()
	a := &srv1alpha1.DRBDAllocation{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Name: srv1alpha1.DRBDAllocationName}, a))
	return a
}

// Two DR namespaces replicating to the same clusters never share a port or a
// minor, and what a DRBDResource uses is not handed out.
func TestClaimsAcrossDRNamespaces(t *testing.T) {
	ctx := context.Background()
	a, b, c := allocCluster{"a", newAllocClient(t, interceptor.Funcs{})}, allocCluster{"b", newAllocClient(t, interceptor.Funcs{})}, allocCluster{"c", newAllocClient(t, interceptor.Funcs{})}

	prod := newClaimer("dr-production", "u1", nil, a, b)
	prod.inUse.ports[7000], prod.inUse.minors[MinorBase] = true, true
	port, minors, err := prod.claim(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, int32(7001), port)
	assert.Equal(t, []int32{MinorBase + 1, MinorBase + 2}, minors)

	// Staging's pair shares only cluster b with production's.
	port, minors, err = newClaimer("dr-staging", "u2", nil, b, c).claim(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, int32(7000), port, "staging's pair has no DRBDResource on 7000")
	assert.Equal(t, []int32{MinorBase}, minors)
	port, minors, err = newClaimer("dr-staging", "u3", []string{"u2"}, b, c).claim(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, int32(7002), port, "7000 and 7001 are claimed on cluster b")
	assert.Equal(t, []int32{MinorBase + 3}, minors)

	assert.Len(t, allocation(t, a.c).Spec.Claims, 1)
	assert.Len(t, allocation(t, b.c).Spec.Claims, 3)
	assert.Len(t, allocation(t, c.c).Spec.Claims, 2)
}

// A writer that lost the race to the same allocation gets a conflict, reads
// the winner's claim and takes the next port.
func TestClaimConflictRetries(t *testing.T) {
	ctx := context.Background()
	updates, raced := 0, false
	shared := newAllocClient(t, interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		updates++
		if !raced {
			// Another DR namespace's quorum-manager claims 7000 between this
			// writer's read and its write.
			raced = true
			_, _, err := newClaimer("dr-staging", "other", nil, allocCluster{"shared", c}).claim(ctx, 1)
			require.NoError(t, err)
		}
		return c.Update(ctx, obj, opts...)
	}})

	port, minors, err := newClaimer("dr-production", "mine", nil, allocCluster{"shared", shared}).claim(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, int32(7001), port)
	assert.Equal(t, []int32{MinorBase + 1}, minors)
	assert.Equal(t, 2, updates, "the first write was refused with a conflict and retried")
	claims := allocation(t, shared).Spec.Claims
	require.Len(t, claims, 2)
	assert.ElementsMatch(t, []int32{7000, 7001}, []int32{claims[0].Port, claims[1].Port})
}

// A quorum-manager that crashed after claiming (before it wrote the request's
// status) finds its own claim and reuses it; a claim on one cluster only (a
// crash between the two writes) is completed on the other.
func TestClaimIsReusedAfterCrash(t *testing.T) {
	ctx := context.Background()
	a, b := allocCluster{"a", newAllocClient(t, interceptor.Funcs{})}, allocCluster{"b", newAllocClient(t, interceptor.Funcs{})}
	port, minors, err := newClaimer("dr-production", "u1", nil, a).claim(ctx, 2)
	require.NoError(t, err)

	again, againMinors, err := newClaimer("dr-production", "u1", nil, a, b).claim(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, port, again)
	assert.Equal(t, minors, againMinors)
	for _, cl := range []allocCluster{a, b} {
		claims := allocation(t, cl.c).Spec.Claims
		require.Len(t, claims, 1, cl.name)
		assert.Equal(t, port, claims[0].Port)
	}
}

// Release drops the request's claim and the DR namespace's orphans (requests
// gone, claimed before the list), never another namespace's claims nor a
// claim newer than the list.
func TestReleaseDropsOwnAndOrphanedClaims(t *testing.T) {
	ctx := context.Background()
	old, fresh := metav1.NewTime(claimNow.Add(-time.Hour)), metav1.NewTime(claimNow)
	a := allocCluster{"a", newAllocClient(t, interceptor.Funcs{}, &srv1alpha1.DRBDAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: srv1alpha1.DRBDAllocationName},
		Spec: srv1alpha1.DRBDAllocationSpec{Claims: []srv1alpha1.DRBDClaim{
			{RequestUID: "mine", DRNamespace: "dr-production", Port: 7000, ClaimedAt: old},
			{RequestUID: "gone", DRNamespace: "dr-production", Port: 7001, ClaimedAt: old},
			{RequestUID: "just-created", DRNamespace: "dr-production", Port: 7002, ClaimedAt: fresh},
			{RequestUID: "alive", DRNamespace: "dr-production", Port: 7003, ClaimedAt: old},
			{RequestUID: "theirs", DRNamespace: "dr-staging", Port: 7004, ClaimedAt: old},
		}},
	})}
	require.NoError(t, newClaimer("dr-production", "mine", []string{"alive"}, a, allocCluster{"b", newAllocClient(t, interceptor.Funcs{})}).release(ctx))
	var left []string
	for _, cl := range allocation(t, a.c).Spec.Claims {
		left = append(left, cl.RequestUID)
	}
	assert.Equal(t, []string{"just-created", "alive", "theirs"}, left)
}

func TestClaimPortsExhausted(t *testing.T) {
	c := newClaimer("dr-production", "u1", nil, allocCluster{"a", newAllocClient(t, interceptor.Funcs{})})
	for p := int32(srv1alpha1.DRBDPortMin); p <= srv1alpha1.DRBDPortMax; p++ {
		c.inUse.ports[p] = true
	}
	_, _, err := c.claim(context.Background(), 1)
	require.ErrorIs(t, err, errPortsExhausted)
}
