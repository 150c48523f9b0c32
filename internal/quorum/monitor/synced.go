package monitor

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Synced is the replication state of a group the storage or VolSync moves in
// cycles (the Offloaded and VolSync backends), as its DRPlacementControl
// reports it.
type Synced struct {
	// LastSyncTime is the last complete sync (VolSync) or the storage's last
	// sync (Offloaded, where the VolumeGroupReplication reports one); nil
	// before the first one.
	LastSyncTime *time.Time
	// Since is when protection started: the lag of a group never synced counts
	// from it.
	Since time.Time
	// Tracked is false when the storage replicates on its own and reports no
	// sync time (schedulingInterval 0m): there is no lag to measure.
	Tracked bool
	// Protected is the DRPC's Protected condition.
	Protected bool
}

// AggregateSynced computes the status of a group of the Offloaded or VolSync
// backend: the lag of every VM is now minus the group's last complete sync,
// since one cycle covers the whole group. Like Aggregate it is pure, and it
// runs the same RPO episodes.
func AggregateSynced(in Input, s Synced) Output {
	now := in.Now.Truncate(time.Second)
	prev := in.Previous
	if prev == nil {
		prev = &srv1alpha1.ReplicationGroupStatusStatus{}
	}
	st := srv1alpha1.ReplicationGroupStatusStatus{
		ObservedGeneration: in.Generation,
		ActiveRPOEvent:     prev.ActiveRPOEvent,
		Conditions:         append([]metav1.Condition(nil), prev.Conditions...),
		FailoverReady:      s.Protected && (s.LastSyncTime != nil || !s.Tracked),
	}
	var base *time.Time
	switch {
	case !s.Tracked:
	case s.LastSyncTime != nil:
		base = s.LastSyncTime
	default:
		base = &s.Since
	}
	if base != nil {
		st.MaxLagSeconds = max(0, int64(now.Sub(*base)/time.Second))
	}
	objective := int64(in.ObjectiveSeconds)
	switch {
	case len(in.Group.Spec.VirtualMachines) == 0:
		st.Health = srv1alpha1.HealthUnknown
	case !s.Protected && s.LastSyncTime == nil:
		st.Health = srv1alpha1.HealthSyncing
	case !s.Protected || st.MaxLagSeconds > objective:
		st.Health = srv1alpha1.HealthDegraded
	default:
		st.Health = srv1alpha1.HealthHealthy
	}
	lags := make([]vmLag, 0, len(in.Group.Spec.VirtualMachines))
	for _, ref := range in.Group.Spec.VirtualMachines {
		st.VirtualMachines = append(st.VirtualMachines, srv1alpha1.VMReplicationState{Name: ref.Name, Namespace: ref.Namespace, FailoverReady: st.FailoverReady})
		// conn: no DRBD link, so no "link down" cause in the RPOEvent.
		lags = append(lags, vmLag{vm: ref.Namespace + "/" + ref.Name, lag: st.MaxLagSeconds, base: base, conn: connConnected})
	}
	sort.Slice(st.VirtualMachines, func(i, j int) bool {
		a, b := st.VirtualMachines[i], st.VirtualMachines[j]
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})
	var next *time.Time
	if base != nil {
		if at := base.Add(time.Duration(objective+1) * time.Second); at.After(now) {
			next = &at
		}
	}
	ep := episode(in, &st, lags, now)
	setConditions(&st, in.ObjectiveSeconds, in.Generation, now)
	for i := range st.Conditions {
		if st.Conditions[i].Type == srv1alpha1.ConditionReady {
			st.Conditions[i].Message = "replication is " + string(st.Health) + syncedDetail(s, st.Health)
		}
	}
	return output(prev, st, ep, next, now)
}

func syncedDetail(s Synced, h srv1alpha1.ReplicationHealth) string {
	switch {
	case h == srv1alpha1.HealthHealthy && !s.Tracked:
		return ": the storage replicates on its own and reports the group protected"
	case h == srv1alpha1.HealthHealthy:
		return ": the last complete sync is within the objective"
	case s.LastSyncTime == nil && s.Tracked:
		return ": no complete sync yet"
	case !s.Protected:
		return ": the DRPlacementControl does not report the group protected"
	}
	return ": the last complete sync is older than the objective"
}
