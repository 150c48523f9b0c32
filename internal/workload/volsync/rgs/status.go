package rgs

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/siterecovery/siterecovery/internal/flow"
)

// Condition types of a ReplicationGroupSource.
const (
	// ConditionReady is True while the group is idle after a complete cycle;
	// False names the step and the PVC a cycle waits on.
	ConditionReady = "Ready"
	// ConditionDiffSync says whether cycles are incremental, and why not.
	ConditionDiffSync = "DiffSync"
)

// Condition reasons.
const (
	ReasonIdle                 = "Idle"
	ReasonSyncing              = "Syncing"
	ReasonSnapshotNotReady     = "SnapshotNotReady"
	ReasonSnapshotFailed       = "SnapshotFailed"
	ReasonRestoreNotBound      = "RestoreNotBound"
	ReasonSourceFailing        = "SourceFailing"
	ReasonNoDestinationAddress = "NoDestinationAddress"
	ReasonNoGroupSnapshotClass = "VolumeGroupSnapshotClassNotFound"
	ReasonNoStorageClass       = "StorageClassNotFound"
	ReasonNoPVCs               = "NoPVCs"
	ReasonMixedStorageClasses  = "MixedStorageClasses"
	ReasonInvalidSpec          = "InvalidSpec"
	ReasonEnabled              = "Enabled"
	ReasonDisabled             = "Disabled"
	ReasonInvalidAnnotation    = "InvalidAnnotationValue"
)

// setReady reports the outcome of the reconcile on the Ready condition and
// returns when to look again for the message to change (see stepMessage).
func (r *Reconciler) setReady(s *scope, err error) time.Duration {
	c := metav1.Condition{Type: ConditionReady, ObservedGeneration: s.rgs.Generation}
	msg, recheck, inStep := r.stepMessage(s, err)
	if !inStep {
		r.steps.forget(s.key())
	}
	switch {
	case inStep:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, flow.ReasonOf(err, ReasonSyncing), flow.Truncate(msg, 1024)
	case err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, flow.ReasonOf(err, "Error"), flow.Truncate(err.Error(), 1024)
	case s.cycle() != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonSyncing, "cycle "+s.cycle()+" in progress"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonIdle, "no cycle in progress"
		if t := s.rgs.Status.LastSyncTime; t != nil {
			c.Message = "last cycle completed at " + t.UTC().Format("2006-01-02T15:04:05Z")
		}
	}
	meta.SetStatusCondition(&s.rgs.Status.Conditions, c)
	return recheck
}
