package protection

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Events of the claim re-check of a Protected request.
const (
	// EventClaimRestored: the request's claim was gone from a cluster's
	// DRBDAllocation (deleted or edited by hand) and was written back with
	// the values its DRBDResources use.
	EventClaimRestored = "ClaimRestored"
	// EventPeerSecretLeft: removing protection could not delete a peer-auth
	// Secret (a workload release without the right to); it names it.
	EventPeerSecretLeft = "PeerSecretLeft"
	// EventClaimTaken: the claim was gone and another request claimed one of
	// its values in the gap; nothing was written.
	EventClaimTaken = "ClaimTaken"
)

// holdOutcome is what a re-check of one cluster found or did.
type holdOutcome struct {
	cluster string
	// restored: the claim was written back.
	restored bool
	// takenBy is the other claim holding one of the request's values; the
	// request's claim was not written.
	takenBy *srv1alpha1.DRBDClaim
}

// hold makes sure every cluster's DRBDAllocation still holds the request's
// claim with exactly port and minors, the values its DRBDResources use. It
// reads one object per cluster and lists nothing: a Protected request is
// re-checked for as long as it lives. A claim that is missing (the
// allocation deleted, or the claim removed by hand) is written back, the
// allocation recreated if need be, with an update carrying the read's
// resourceVersion. It never writes a value another claim holds: written
// twice, DRBD on one node would get one port or minor for two VMs; such a
// cluster is reported with the other claim and left as it is.
func (c *claimer) hold(ctx context.Context, port int32, minors []int32) ([]holdOutcome, error) {
	want := c.self
	want.Port, want.Minors, want.ClaimedAt = port, slices.Clone(minors), metav1.NewTime(c.now)
	var out []holdOutcome
	for _, cl := range c.clusters {
		o, err := c.holdOn(ctx, cl, want)
		if err != nil {
			return out, err
		}
		if o.restored || o.takenBy != nil {
			out = append(out, o)
		}
	}
	return out, nil
}

func (c *claimer) holdOn(ctx context.Context, cl allocCluster, want srv1alpha1.DRBDClaim) (holdOutcome, error) {
	o := holdOutcome{cluster: cl.name}
	for range claimAttempts {
		a := &srv1alpha1.DRBDAllocation{}
		key := types.NamespacedName{Name: srv1alpha1.DRBDAllocationName}
		err := cl.c.Get(ctx, key, a)
		if apierrors.IsNotFound(err) {
			a = &srv1alpha1.DRBDAllocation{ObjectMeta: metav1.ObjectMeta{Name: srv1alpha1.DRBDAllocationName},
				Spec: srv1alpha1.DRBDAllocationSpec{Claims: []srv1alpha1.DRBDClaim{want}}}
			switch err := cl.c.Create(ctx, a); {
			case err == nil:
				o.restored = true
				return o, nil
			case apierrors.IsAlreadyExists(err):
				continue // another claimer recreated it first: decide on its content
			default:
				return o, fmt.Errorf("recreating DRBDAllocation %s on cluster %s: %w", srv1alpha1.DRBDAllocationName, cl.name, err)
			}
		}
		if err != nil {
			return o, fmt.Errorf("reading DRBDAllocation %s on cluster %s: %w", srv1alpha1.DRBDAllocationName, cl.name, err)
		}
		if held, ok := c.find(a); ok && held.Port == want.Port && slices.Equal(held.Minors, want.Minors) {
			return o, nil
		}
		if other := holding(a, want); other != nil {
			o.takenBy = other
			return o, nil
		}
		a.Spec.Claims = slices.DeleteFunc(a.Spec.Claims, func(x srv1alpha1.DRBDClaim) bool { return x.RequestUID == want.RequestUID })
		a.Spec.Claims = append(a.Spec.Claims, want)
		switch err := cl.c.Update(ctx, a); {
		case err == nil:
			o.restored = true
			return o, nil
		case !apierrors.IsConflict(err):
			return o, fmt.Errorf("restoring the claim of %s on cluster %s: %w", want.Request, cl.name, err)
		}
	}
	return o, errClaimConflict
}

// holding returns a claim of another request in a that holds want's port or
// one of its minors. Every other claim counts, orphaned or not: whether a
// claim of another DR namespace is still used is not known here, and a
// re-check must not guess.
func holding(a *srv1alpha1.DRBDAllocation, want srv1alpha1.DRBDClaim) *srv1alpha1.DRBDClaim {
	for i := range a.Spec.Claims {
		o := &a.Spec.Claims[i]
		if o.RequestUID == want.RequestUID {
			continue
		}
		if o.Port == want.Port || slices.ContainsFunc(o.Minors, func(m int32) bool { return slices.Contains(want.Minors, m) }) {
			return o
		}
	}
	return nil
}

// claimValues says port and minors for people.
func claimValues(port int32, minors []int32) string {
	ms := make([]string, len(minors))
	for i, m := range minors {
		ms[i] = fmt.Sprint(m)
	}
	return fmt.Sprintf("port %d, minors %s", port, strings.Join(ms, ","))
}

// takenMessage is the ClaimTaken warning: which values, who holds them, and
// the way out.
func takenMessage(req *srv1alpha1.ProtectionRequest, o holdOutcome) string {
	return fmt.Sprintf("the claim of this request (%s) was removed from DRBDAllocation %s on cluster %s, and ProtectionRequest %s/%s (uid %s, %s) claimed a value of it since; "+
		"two VMs must not replicate on one DRBD port or minor, so nothing was written. Unprotect and re-protect one of the two VMs (%s/%s or that request's) so that it gets new values",
		claimValues(req.Status.Port, requestMinors(req)), srv1alpha1.DRBDAllocationName, o.cluster,
		o.takenBy.DRNamespace, o.takenBy.Request, o.takenBy.RequestUID, claimValues(o.takenBy.Port, o.takenBy.Minors),
		req.Spec.VirtualMachine.Namespace, req.Spec.VirtualMachine.Name)
}

func restoredMessage(req *srv1alpha1.ProtectionRequest, o holdOutcome) string {
	return fmt.Sprintf("the claim of this request (%s) was missing from DRBDAllocation %s on cluster %s (deleted or edited by hand); it was written back with the values its DRBDResources use",
		claimValues(req.Status.Port, requestMinors(req)), srv1alpha1.DRBDAllocationName, o.cluster)
}

func requestMinors(req *srv1alpha1.ProtectionRequest) []int32 {
	out := make([]int32, len(req.Status.Volumes))
	for i, v := range req.Status.Volumes {
		out[i] = v.Minor
	}
	return out
}
