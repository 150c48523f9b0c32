package pgsync

import (
	"fmt"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// setLastPoint makes the group's status.consistency.lastPoint the newest of
// its own and those its workload copies report (a VolSync cycle's point is
// taken by the primary's pg-controller and recorded in its copy). A point
// already there that is as new stays: test failover writes its own points
// into the quorum copy directly.
func setLastPoint(s *scope) {
	newest := lastPoint(s.group)
	for _, c := range s.clusters {
		if c.point != nil && (newest == nil || c.point.Time.After(newest.Time.Time)) {
			newest = c.point
		}
	}
	if newest == nil || newest == lastPoint(s.group) {
		return
	}
	if s.group.Status.Consistency == nil {
		s.group.Status.Consistency = &srv1alpha1.ConsistencyStatus{}
	}
	s.group.Status.Consistency.LastPoint = newest.DeepCopy()
}

func lastPoint(g *srv1alpha1.ProtectionGroup) *srv1alpha1.ConsistencyPoint {
	if g.Status.Consistency == nil {
		return nil
	}
	return g.Status.Consistency.LastPoint
}

// consistencySummary describes spec.consistency for a drift message.
func consistencySummary(c *srv1alpha1.ConsistencySpec) string {
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("mode %s, freezeTimeoutSeconds %d", c.Mode, c.FreezeTimeoutSeconds)
}
