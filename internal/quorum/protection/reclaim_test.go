package protection

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// calls counts a fake client's requests by verb.
type calls map[string]int

func (c calls) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			c["get"]++
			return cl.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			c["list"]++
			return cl.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			c["create"]++
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			c["update"]++
			return cl.Update(ctx, obj, opts...)
		},
	}
}

func allocWith(claims ...srv1alpha1.DRBDClaim) *srv1alpha1.DRBDAllocation {
	return &srv1alpha1.DRBDAllocation{ObjectMeta: metav1.ObjectMeta{Name: srv1alpha1.DRBDAllocationName}, Spec: srv1alpha1.DRBDAllocationSpec{Claims: claims}}
}

func claimOf(ns, uid string, port int32, minors ...int32) srv1alpha1.DRBDClaim {
	return srv1alpha1.DRBDClaim{RequestUID: uid, DRNamespace: ns, Request: "protect-" + uid, Port: port, Minors: minors, ClaimedAt: metav1.NewTime(claimNow.Add(-time.Hour))}
}

// strip drops the time, whose location a round trip through the client changes.
func strip(c srv1alpha1.DRBDClaim) srv1alpha1.DRBDClaim {
	c.ClaimedAt = metav1.Time{}
	return c
}

// A claim that is in place costs one read per cluster: no list, no write.
func TestHoldReadsOneObjectPerCluster(t *testing.T) {
	ca, cb := calls{}, calls{}
	mine := claimOf("dr-production", "u1", 7003, 1003, 1004)
	a := allocCluster{"a", newAllocClient(t, ca.funcs(), allocWith(mine, claimOf("dr-staging", "s1", 7000, 1000)))}
	b := allocCluster{"b", newAllocClient(t, cb.funcs(), allocWith(mine))}
	out, err := newClaimer("dr-production", "u1", nil, a, b).hold(context.Background(), 7003, []int32{1003, 1004})
	require.NoError(t, err)
	assert.Empty(t, out)
	assert.Equal(t, calls{"get": 1}, ca)
	assert.Equal(t, calls{"get": 1}, cb)
}

// An allocation deleted by hand is recreated with exactly the request's
// port and minors; the other cluster is left alone.
func TestHoldRestoresDeletedAllocation(t *testing.T) {
	ctx := context.Background()
	cb := calls{}
	mine := claimOf("dr-production", "u1", 7003, 1003, 1004)
	a := allocCluster{"a", newAllocClient(t, interceptor.Funcs{}, allocWith(mine))}
	b := allocCluster{"b", newAllocClient(t, cb.funcs())}
	out, err := newClaimer("dr-production", "u1", nil, a, b).hold(ctx, 7003, []int32{1003, 1004})
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.Equal(t, "b", out[0].cluster)
	assert.True(t, out[0].restored)
	got := allocation(t, b.c).Spec.Claims
	require.Len(t, got, 1)
	assert.Equal(t, "u1", got[0].RequestUID)
	assert.Equal(t, "dr-production", got[0].DRNamespace)
	assert.Equal(t, int32(7003), got[0].Port)
	assert.Equal(t, []int32{1003, 1004}, got[0].Minors)
	assert.Zero(t, cb["list"])
	assert.Len(t, allocation(t, a.c).Spec.Claims, 1, "the intact cluster is not written")
}

// A claim removed from an allocation that still holds others is added back
// beside them, through an update that retries a conflict.
func TestHoldRestoresRemovedClaimAfterConflict(t *testing.T) {
	ctx := context.Background()
	conflicts := 1
	funcs := interceptor.Funcs{Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if conflicts > 0 {
			conflicts--
			return apierrors.NewConflict(schema.GroupResource{Resource: "drbdallocations"}, obj.GetName(), nil)
		}
		return cl.Update(ctx, obj, opts...)
	}}
	other := claimOf("dr-staging", "s1", 7000, 1000)
	a := allocCluster{"a", newAllocClient(t, funcs, allocWith(other))}
	out, err := newClaimer("dr-production", "u1", nil, a).hold(ctx, 7003, []int32{1003})
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.True(t, out[0].restored)
	got := allocation(t, a.c).Spec.Claims
	require.Len(t, got, 2)
	assert.Equal(t, strip(other), strip(got[0]))
	assert.Equal(t, int32(7003), got[1].Port)
}

// A claim whose values were changed by hand gets its values back.
func TestHoldRewritesAlteredClaim(t *testing.T) {
	a := allocCluster{"a", newAllocClient(t, interceptor.Funcs{}, allocWith(claimOf("dr-production", "u1", 7009, 1009)))}
	out, err := newClaimer("dr-production", "u1", nil, a).hold(context.Background(), 7003, []int32{1003})
	require.NoError(t, err)
	require.Len(t, out, 1)
	got := allocation(t, a.c).Spec.Claims
	require.Len(t, got, 1)
	assert.Equal(t, int32(7003), got[0].Port)
	assert.Equal(t, []int32{1003}, got[0].Minors)
}

// The allocation was deleted and another request, of another DR namespace,
// claimed the request's port (or one of its minors) in the gap. Writing the
// claim back would give two VMs one DRBD port on a node: nothing is written,
// and the outcome names the other request.
func TestHoldRefusesValuesAnotherRequestClaimed(t *testing.T) {
	for name, other := range map[string]srv1alpha1.DRBDClaim{
		"port":  claimOf("dr-staging", "s9", 7003, 1000),
		"minor": claimOf("dr-staging", "s9", 7100, 1004),
		// An orphan by the namespace's own rules is still not overwritten
		// here: the re-check lists no requests to judge it.
		"own namespace": claimOf("dr-production", "u9", 7003, 1100),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cb := calls{}
			mine := claimOf("dr-production", "u1", 7003, 1003, 1004)
			a := allocCluster{"a", newAllocClient(t, interceptor.Funcs{}, allocWith(mine))}
			b := allocCluster{"b", newAllocClient(t, cb.funcs(), allocWith(other))}
			before := allocation(t, b.c)
			out, err := newClaimer("dr-production", "u1", nil, a, b).hold(ctx, 7003, []int32{1003, 1004})
			require.NoError(t, err)
			require.Len(t, out, 1)
			assert.Equal(t, "b", out[0].cluster)
			assert.False(t, out[0].restored)
			require.NotNil(t, out[0].takenBy)
			assert.Equal(t, other.RequestUID, out[0].takenBy.RequestUID)
			assert.Zero(t, cb["update"]+cb["create"], "nothing is written")
			after := allocation(t, b.c)
			assert.Equal(t, before.ResourceVersion, after.ResourceVersion)
			require.Len(t, after.Spec.Claims, 1)
			assert.Equal(t, strip(other), strip(after.Spec.Claims[0]))

			req := &srv1alpha1.ProtectionRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "dr-production", Name: "protect-u1"}}
			req.Spec.VirtualMachine.Namespace, req.Spec.VirtualMachine.Name = "apps", "web"
			req.Status.Port = 7003
			req.Status.Volumes = []srv1alpha1.ProtectedVolume{{Minor: 1003}, {Minor: 1004}}
			msg := takenMessage(req, out[0])
			for _, want := range []string{"port 7003, minors 1003,1004", "cluster b", other.DRNamespace + "/" + other.Request, other.RequestUID,
				"nothing was written", "Unprotect and re-protect one of the two VMs", "apps/web"} {
				assert.Contains(t, msg, want)
			}
		})
	}
}

// The allocation is recreated by another claimer between the read and the
// create: the re-check decides on what that claimer wrote.
func TestHoldRecreateRace(t *testing.T) {
	ctx := context.Background()
	var c client.Client
	funcs := interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		// Another request gets there first and takes the port.
		require.NoError(t, cl.Create(ctx, allocWith(claimOf("dr-staging", "s9", 7003, 1000))))
		return cl.Create(ctx, obj, opts...)
	}}
	c = newAllocClient(t, funcs)
	out, err := newClaimer("dr-production", "u1", nil, allocCluster{"a", c}).hold(ctx, 7003, []int32{1003})
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.NotNil(t, out[0].takenBy)
	assert.Equal(t, "s9", out[0].takenBy.RequestUID)
	assert.Len(t, allocation(t, c).Spec.Claims, 1)
}

// The first re-check after a restart comes at a random point of the first
// interval; the next ones one interval ± 20 % apart; a request recreated
// under the same name starts afresh.
func TestClaimRecheckSchedule(t *testing.T) {
	draws := []float64{0.25, 0, 0.999, 0.5}
	defer func(f func() float64) { recheckRand = f }(recheckRand)
	recheckRand = func() float64 { d := draws[0]; draws = draws[1:]; return d }
	const every = 5 * time.Minute
	var c claimRechecks
	key, now := types.NamespacedName{Namespace: "dr-production", Name: "protect-web"}, claimNow

	wait, due := c.next(key, "u1", now, every)
	assert.False(t, due, "never at once after a restart")
	assert.Equal(t, every/4, wait)
	wait, due = c.next(key, "u1", now.Add(time.Minute), every)
	assert.False(t, due, "an event before the due time does not re-check")
	assert.Equal(t, every/4-time.Minute, wait)
	_, due = c.next(key, "u1", now.Add(every/4), every)
	assert.True(t, due)
	assert.Equal(t, 4*time.Minute, c.checked(key, "u1", now, every), "-20 %")
	assert.InDelta(t, float64(6*time.Minute), float64(c.checked(key, "u1", now, every)), float64(time.Second), "+20 %")

	wait, due = c.next(key, "u2", now, every)
	assert.False(t, due, "a new request under the name starts afresh")
	assert.Equal(t, every/2, wait)
	c.forget(key)
	assert.Empty(t, c.due)
}
