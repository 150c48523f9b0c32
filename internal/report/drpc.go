package report

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// KindDRPlacementControl is a Failover's Kind when it was a DRPC's action.
const KindDRPlacementControl = "DRPlacementControl"

// DRPCsHiddenNote is the note of a report whose reader may not list
// DRPlacementControls: a failover made through one is not in it.
const DRPCsHiddenNote = "you may not list DRPlacementControls: the last failover leaves out a failover or relocate made through one"

// fromDRPCs is the newest finished action (Failover or Relocate) of the
// DRPCs that place the group. A DRPC keeps only its last action: it is
// finished once the DRPC rests in the action's phase with the action's
// duration written, which happens when the application runs on the target
// (internal/quorum/drpc, complete); a new action clears the duration.
func fromDRPCs(pg *srv1alpha1.ProtectionGroup, drpcs []drv1alpha1.DRPlacementControl) *Failover {
	var best *Failover
	for i := range drpcs {
		d := &drpcs[i]
		if d.Spec.ProtectionGroupRef.Name != pg.Name {
			continue
		}
		best = newer(best, fromDRPC(d))
	}
	return best
}

// fromDRPC is d's finished action, nil when it has none.
func fromDRPC(d *drv1alpha1.DRPlacementControl) *Failover {
	st := &d.Status
	if st.ActionStartTime == nil || st.ActionDuration == nil {
		return nil
	}
	var target, source string
	switch {
	case d.Spec.Action == drv1alpha1.ActionFailover && st.Phase == drv1alpha1.DRStateFailedOver:
		target, source = d.Spec.FailoverCluster, d.Spec.PreferredCluster
	case d.Spec.Action == drv1alpha1.ActionRelocate && st.Phase == drv1alpha1.DRStateRelocated:
		target, source = d.Spec.PreferredCluster, d.Spec.FailoverCluster
	default:
		return nil
	}
	if source == target {
		// A DRPolicy has two clusters, so the other one named is the source;
		// with one named, the report does not guess.
		source = ""
	}
	dur := st.ActionDuration.Duration
	rto := seconds(dur)
	return &Failover{Name: d.Name, Kind: KindDRPlacementControl, Type: string(d.Spec.Action), SourceCluster: source, TargetCluster: target,
		Outcome: string(srv1alpha1.FailoverCompleted), StartTime: st.ActionStartTime.DeepCopy(),
		CompletionTime: &metav1.Time{Time: st.ActionStartTime.Add(dur)}, RTOSeconds: &rto}
}
