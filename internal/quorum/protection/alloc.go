package protection

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// usage is what ports and minors are taken in the zone.
type usage struct {
	ports  map[int32]bool
	minors map[int32]bool
}

// allocate picks the replication port and one minor per volume and writes them
// into the request's status (not yet persisted). Taken are the ports and minors
// of every other ProtectionRequest of the DR namespace (read without the cache,
// so a just-written allocation is seen) and of every DRBDResource on the primary
// and target clusters.
func (r *Reconciler) allocate(ctx context.Context, s *scope) error {
	u := usage{ports: map[int32]bool{}, minors: map[int32]bool{}}
	reqs := &srv1alpha1.ProtectionRequestList{}
	if err := r.APIReader.List(ctx, reqs, client.InNamespace(s.req.Namespace)); err != nil {
		return flow.Transient(ReasonRequestFailed, fmt.Errorf("listing ProtectionRequests: %w", err))
	}
	for _, o := range reqs.Items {
		if o.UID == s.req.UID {
			continue
		}
		u.ports[o.Status.Port] = true
		for _, v := range o.Status.Volumes {
			if o.Status.Port != 0 {
				u.minors[v.Minor] = true
			}
		}
	}
	for cluster, rc := range map[string]client.Reader{s.primaryCluster: s.primary.Direct, s.target: s.dr.Direct} {
		list := &srv1alpha1.DRBDResourceList{}
		if err := rc.List(ctx, list); err != nil {
			return remoteErr(cluster, "listing DRBDResources", err)
		}
		for _, d := range list.Items {
			u.ports[d.Spec.Port] = true
			for _, v := range d.Spec.Volumes {
				u.minors[v.Minor] = true
			}
		}
	}
	port, ok := u.freePort()
	if !ok {
		return flow.Stalled(ReasonPortsExhausted, "every replication port %d-%d is in use in zone %s", srv1alpha1.DRBDPortMin, srv1alpha1.DRBDPortMax, s.zone.Name)
	}
	s.req.Status.Port = port
	for i := range s.req.Status.Volumes {
		s.req.Status.Volumes[i].Minor = u.takeMinor()
	}
	return nil
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
