package protection

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// usage is what ports and minors are taken.
type usage struct {
	ports  map[int32]bool
	minors map[int32]bool
}

// allocate picks the replication port and one minor per volume, claims them in
// the DRBDAllocation of the primary and of the target cluster, and writes them
// into the request's status (not yet persisted). Taken are the claims of every
// DR namespace on either cluster, the ports and minors of every DRBDResource
// there, and those of the DR namespace's other requests (read without the
// cache, so a just-written allocation is seen).
func (r *Reconciler) allocate(ctx context.Context, s *scope) error {
	c, err := r.claimer(ctx, s)
	if err != nil {
		return err
	}
	for cluster, rc := range map[string]client.Reader{s.primaryCluster: s.primary.Direct, s.target: s.dr.Direct} {
		list := &srv1alpha1.DRBDResourceList{}
		if err := rc.List(ctx, list); err != nil {
			return remoteErr(cluster, "listing DRBDResources", err)
		}
		for _, d := range list.Items {
			c.inUse.ports[d.Spec.Port] = true
			for _, v := range d.Spec.Volumes {
				c.inUse.minors[v.Minor] = true
			}
		}
	}
	port, minors, err := c.claim(ctx, len(s.req.Status.Volumes))
	switch {
	case errors.Is(err, errPortsExhausted):
		return flow.Stalled(ReasonPortsExhausted, "every replication port %d-%d is in use on cluster %s or %s", srv1alpha1.DRBDPortMin, srv1alpha1.DRBDPortMax, s.primaryCluster, s.target)
	case err != nil:
		return flow.Transient(ReasonRequestFailed, err)
	}
	s.req.Status.Port = port
	for i := range s.req.Status.Volumes {
		s.req.Status.Volumes[i].Minor = minors[i]
	}
	return nil
}

// releaseClaims drops the request's claim from both clusters' DRBDAllocations,
// once its DRBDResources are gone: freed earlier, the port could go to another
// request while DRBD still listens on it.
func (r *Reconciler) releaseClaims(ctx context.Context, s *scope) (ctrl.Result, error) {
	c, err := r.claimer(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := c.release(ctx); err != nil {
		return ctrl.Result{}, flow.Transient(ReasonRequestFailed, err)
	}
	return ctrl.Result{}, nil
}

// claimer is the request's claimer on its primary and target clusters, with
// the DR namespace's requests listed now: their uids decide which claims of
// the namespace are orphaned, and their ports and minors are in use.
func (r *Reconciler) claimer(ctx context.Context, s *scope) (*claimer, error) {
	c := &claimer{
		clusters: []allocCluster{{name: s.primaryCluster, c: s.primary.Direct}, {name: s.target, c: s.dr.Direct}},
		self:     srv1alpha1.DRBDClaim{RequestUID: string(s.req.UID), DRNamespace: s.req.Namespace, Request: s.req.Name},
		inUse:    usage{ports: map[int32]bool{}, minors: map[int32]bool{}},
		live:     map[types.UID]bool{},
		listedAt: r.now(),
		now:      r.now(),
	}
	reqs := &srv1alpha1.ProtectionRequestList{}
	if err := r.APIReader.List(ctx, reqs, client.InNamespace(s.req.Namespace)); err != nil {
		return nil, flow.Transient(ReasonRequestFailed, fmt.Errorf("listing ProtectionRequests: %w", err))
	}
	for _, o := range reqs.Items {
		c.live[o.UID] = true
		if o.UID == s.req.UID || o.Status.Port == 0 {
			continue
		}
		c.inUse.ports[o.Status.Port] = true
		for _, v := range o.Status.Volumes {
			c.inUse.minors[v.Minor] = true
		}
	}
	return c, nil
}

func (u usage) freePort() (int32, bool) {
	for p := int32(srv1alpha1.DRBDPortMin); p <= srv1alpha1.DRBDPortMax; p++ {
		if !u.ports[p] {
			return p, true
		}
	}
	return 0, false
}

func (u usage) takeMinor() int32 {
	m := int32(MinorBase)
	for u.minors[m] {
		m++
	}
	u.minors[m] = true
	return m
}
