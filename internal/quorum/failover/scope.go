package failover

import (
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// scope is what one reconcile of a FailoverRequest works on.
type scope struct {
	req    *srv1alpha1.FailoverRequest
	before *srv1alpha1.FailoverRequest
	now    time.Time

	group *srv1alpha1.ProtectionGroup
	zone  *srv1alpha1.ProtectionZone
	// events to record once the status is written, so that a failed status write
	// does not leave an event claiming a transition that was not persisted.
	events []flow.Event
}

func (s *scope) unplanned() bool { return s.req.Spec.FailoverType == srv1alpha1.FailoverUnplanned }

func (s *scope) key(cluster string) remote.Key {
	return remote.Key{Namespace: s.req.Namespace, Zone: s.zone.Name, Cluster: cluster}
}

// source is the cluster the group ran on when the request started.
func (s *scope) source() string { return s.req.Status.SourceCluster }

func (s *scope) target() string { return s.req.Spec.TargetCluster }

// enteredAt is when the request entered phase, from its audit trail.
func (s *scope) enteredAt(phase srv1alpha1.FailoverPhase) time.Time {
	h := s.req.Status.PhaseHistory
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Phase == string(phase) {
			return h[i].Time.Time
		}
	}
	return s.now
}
