package failover

import (
	"context"
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
	// loaded: group and zone were read in this reconcile (loadGroupAndZone).
	loaded bool
	// trail is the request's audit trail: its phase, history, conditions, and
	// the events recorded once the status is written.
	trail *flow.Trail[srv1alpha1.FailoverPhase]
	// wake, when set, is the latest a reconcile should look again although
	// nothing it watches changes (wakeAt).
	wake time.Time
	// replicas are the group's DRBDResources per cluster, as this reconcile
	// read them (replicasOf).
	replicas map[string][]srv1alpha1.DRBDResource
}

// replicasOf lists the group's DRBDResources on rc's cluster from its cache,
// once per reconcile. A reconcile in WaitingForDRBD asks for each cluster's
// two or three times (silent agents, the source's gaps and roles, the
// target's roles), each list walks the cluster's cached replicas, and the
// request wakes on every replica's change: in a group of N VMs that was N²
// reads per step, several times over. The copies are the cache's own
// (readOnly): read them, never change them.
func (s *scope) replicasOf(ctx context.Context, rc *remote.Remote) ([]srv1alpha1.DRBDResource, error) {
	if res, ok := s.replicas[rc.Key.Cluster]; ok {
		return res, nil
	}
	res, err := drbdResources(ctx, rc, s.group.Name)
	if err != nil {
		return nil, err
	}
	if s.replicas == nil {
		s.replicas = map[string][]srv1alpha1.DRBDResource{}
	}
	s.replicas[rc.Key.Cluster] = res
	return res, nil
}

// wakeAt asks for a reconcile no later than t.
func (s *scope) wakeAt(t time.Time) {
	if s.wake.IsZero() || t.Before(s.wake) {
		s.wake = t
	}
}

// phases are the terminal phases of a FailoverRequest.
var phases = flow.Terminals[srv1alpha1.FailoverPhase]{Succeeded: srv1alpha1.FailoverCompleted, Failed: srv1alpha1.FailoverFailed}

func newScope(fr *srv1alpha1.FailoverRequest, now time.Time) *scope {
	st := &fr.Status
	return &scope{req: fr, before: fr.DeepCopy(), now: now, trail: &flow.Trail[srv1alpha1.FailoverPhase]{
		Phase: &st.Phase, History: &st.PhaseHistory, Conditions: &st.Conditions, Message: &st.Message,
		CompletionTime: &st.CompletionTime, Generation: fr.Generation, Now: now, Terminals: phases,
	}}
}

func (s *scope) unplanned() bool { return s.req.Spec.FailoverType == srv1alpha1.FailoverUnplanned }

func (s *scope) key(cluster string) remote.Key {
	return remote.Key{Namespace: s.req.Namespace, Zone: s.zone.Name, Cluster: cluster}
}

// source is the cluster the group ran on when the request started.
func (s *scope) source() string { return s.req.Status.SourceCluster }

func (s *scope) target() string { return s.req.Spec.TargetCluster }
