package storagearray

import (
	"sync/atomic"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sync makes a simulated array replicate in cycles, as an array with a
// schedulingInterval does: it ends a cycle every Interval and reports its end
// as the primary VolumeGroupReplication's status.lastSyncTime. Pause stands
// for a replication link that is down: no cycle ends until Resume, so the
// group's lag grows as it would on a real array. One Sync may be shared by the
// simulators of several clusters, which then lose their link together.
type Sync struct {
	// Interval is the time between the ends of two cycles.
	Interval time.Duration

	paused atomic.Bool
}

// Pause stops ending cycles: the link is down.
func (s *Sync) Pause() { s.paused.Store(true) }

// Resume ends cycles again; the first one ends at the next reconcile that
// finds the last one an Interval old or more.
func (s *Sync) Resume() { s.paused.Store(false) }

// Paused reports whether the link is down.
func (s *Sync) Paused() bool { return s.paused.Load() }

// sync ends a cycle on a primary when one is due and says when the next one
// is. A paused link ends none and looks again after a tenth of Interval, so
// that a resumed link is seen soon.
func (s *Sync) sync(vgr *replicationv1alpha1.VolumeGroupReplication, now time.Time) time.Duration {
	if vgr.Status.State != replicationv1alpha1.PrimaryState || s.Interval <= 0 {
		return 0
	}
	if s.Paused() {
		return max(s.Interval/10, 100*time.Millisecond)
	}
	st := &vgr.Status
	if last := st.LastSyncTime; last != nil {
		if age := now.Sub(last.Time); age < s.Interval {
			return s.Interval - age
		}
	}
	st.LastSyncTime = &metav1.Time{Time: now}
	st.LastSyncDuration = &metav1.Duration{Duration: s.Interval / 10}
	return s.Interval
}
