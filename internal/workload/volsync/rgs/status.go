package rgs

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// Condition types of a ReplicationGroupSource, besides srv1alpha1.ConditionReady,
// which is True while the group is idle after a complete cycle and False names
// the step and the PVC a cycle waits on.
const (
	// ConditionDiffSync says whether cycles are incremental, and why not.
	ConditionDiffSync = "DiffSync"
)

// Condition reasons.
const (
	ReasonIdle                 = "Idle"
	ReasonSnapshotNotReady     = "SnapshotNotReady"
	ReasonRestoreNotBound      = "RestoreNotBound"
	ReasonSourceFailing        = "SourceFailing"
	ReasonNoDestinationAddress = "NoDestinationAddress"
	ReasonNoGroupSnapshotClass = "VolumeGroupSnapshotClassNotFound"
	ReasonNoPVCs               = "NoPVCs"
	ReasonMixedStorageClasses  = "MixedStorageClasses"
	ReasonEnabled              = "Enabled"
	ReasonDisabled             = "Disabled"
	ReasonInvalidAnnotation    = "InvalidAnnotationValue"
)

// setReady reports the outcome of the reconcile on the Ready condition and
// returns when to look again for the message to change (see stepMessage).
func (r *Reconciler) setReady(s *scope, err error) time.Duration {
	var c metav1.Condition
	msg, recheck, inStep := r.stepMessage(s, err)
	if !inStep {
		r.steps.forget(s.key())
	}
	switch {
	case inStep:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, flow.ReasonOf(err, srv1alpha1.ReasonSyncing), flow.Truncate(msg, 1024)
	case err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, flow.ReasonOf(err, "Error"), flow.Truncate(err.Error(), 1024)
	case s.cycle() != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, srv1alpha1.ReasonSyncing, "cycle "+s.cycle()+" in progress"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonIdle, "no cycle in progress"
		if t := s.rgs.Status.LastSyncTime; t != nil {
			c.Message = "last cycle completed at " + t.UTC().Format("2006-01-02T15:04:05Z")
		}
	}
	// A cycle under way or waiting on its snapshot or destination is
	// Reconciling; an error that only a spec change fixes is Stalled.
	s.rgs.Status.ObservedGeneration = s.rgs.Generation
	e := flow.As(err)
	flow.SetReady(&s.rgs.Status.Conditions, s.rgs.Generation, c.Status, c.Reason, c.Message, e != nil && e.Terminal())
	return recheck
}
