package drpc

import (
	"fmt"
	"time"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// scope is what one reconcile of a DRPlacementControl works on.
type scope struct {
	drpc   *drv1alpha1.DRPlacementControl
	before *drv1alpha1.DRPlacementControl
	now    time.Time

	policy *drv1alpha1.DRPolicy
	// group is the quorum copy of the application.
	group *srv1alpha1.ProtectionGroup
	zone  string
	// backend is the zone's storage backend.
	backend srv1alpha1.StorageBackend
	// vrgNamespace is where the VRGs live on the workload clusters.
	vrgNamespace string

	// clusters are the policy's drClusters; what could be read on each of them.
	clusters []string
	remotes  map[string]*remote.Remote
	// unreachable holds why a cluster could not be used.
	unreachable map[string]error
	// syncing is set when a reachable cluster's cache has not synced yet.
	syncing bool
	vrgs    map[string]*drv1alpha1.VolumeReplicationGroup
	copies  map[string]*srv1alpha1.ProtectionGroup

	// finalSync is the final sync a relocate asks the source's primary VRG for.
	finalSync string

	// waiting says what the current step waits for, for the Available message.
	waiting string

	// events to record once the status is written.
	events []flow.Event
}

func (s *scope) key(cluster string) remote.Key {
	return remote.Key{Namespace: s.drpc.Namespace, Zone: s.zone, Cluster: cluster}
}

// waitFor records what the current step waits for.
func (s *scope) waitFor(format string, args ...any) { s.waiting = fmt.Sprintf(format, args...) }

// takeEvent removes the pending event with reason and returns its message.
func (s *scope) takeEvent(reason string) (string, bool) {
	for i, e := range s.events {
		if e.Reason == reason {
			s.events = append(s.events[:i], s.events[i+1:]...)
			return e.Message, true
		}
	}
	return "", false
}

// current is where the application runs now; empty before the first deploy.
func (s *scope) current() string { return s.drpc.Status.PreferredDecision.ClusterName }

// target is where the application should run.
func (s *scope) target() string {
	return targetOf(s.drpc, s.current(), s.group)
}

// targetOf is the cluster a DRPC asks for: failoverCluster for a Failover,
// preferredCluster for a Relocate, and without an action the current cluster, or
// before the first deploy the preferredCluster (the group's active cluster if
// none is set).
func targetOf(d *drv1alpha1.DRPlacementControl, current string, group *srv1alpha1.ProtectionGroup) string {
	switch d.Spec.Action {
	case drv1alpha1.ActionFailover:
		return d.Spec.FailoverCluster
	case drv1alpha1.ActionRelocate:
		return d.Spec.PreferredCluster
	}
	if current != "" {
		return current
	}
	if d.Spec.PreferredCluster == "" && group != nil {
		return group.Spec.ActiveCluster
	}
	return d.Spec.PreferredCluster
}

// other is the cluster of the policy that is not c.
func (s *scope) other(c string) string {
	for _, x := range s.clusters {
		if x != c {
			return x
		}
	}
	return ""
}

// globalVGR is the DRPC's global-vgr label, empty when it has none.
func (s *scope) globalVGR() string { return s.drpc.Labels[drv1alpha1.GlobalVGRLabel] }

// inAction reports whether the DRPC has passed the consensus gate of its
// current action and is moving the application.
func (s *scope) inAction() bool {
	p := s.drpc.Status.Phase
	return p == drv1alpha1.DRStateFailingOver || p == drv1alpha1.DRStateRelocating
}
