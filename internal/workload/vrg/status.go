package vrg

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// messageNoPVCsAsPrimary is the DataReady/DataProtected message of a primary VRG that
// selects no PVCs.
const messageNoPVCsAsPrimary = "No PVCs are protected using VolumeReplication scheme"

// setStatus computes the VRG's status from the scope; it only reads the scope.
func setStatus(s *scope) {
	if s.volsync {
		setVolSyncStatus(s)
	} else {
		setReplicationStatus(s)
	}
	setReady(s)
}

// setReady sets Ready from DataReady: the VRG's PVCs are ready for use in its
// state. Until then it is Reconciling; a pvcSelector that cannot be used or
// selects PVCs of more than one group is Stalled (the spec must change).
func setReady(s *scope) {
	var stalled error
	if s.mappingError != "" {
		stalled = flow.Stalled(drv1alpha1.ReasonError, "%s", s.mappingError)
	}
	flow.ReadyFrom(&s.vrg.Status.Conditions, s.vrg.Generation, drv1alpha1.ConditionDataReady, stalled)
}

// setReplicationStatus computes the status of a VRG on the VolumeReplication
// path.
func setReplicationStatus(s *scope) {
	st := &s.vrg.Status
	if s.pvcsProcessed {
		st.ProtectedPVCs = protectedPVCs(s)
		if s.vgr != nil && len(st.ProtectedPVCs) > 0 {
			st.LastGroupSyncTime = s.vgr.Status.LastSyncTime
		}
	}
	if st.ProtectedPVCs == nil {
		st.ProtectedPVCs = []drv1alpha1.ProtectedPVC{}
	}
	st.State = observedState(s)
	ready, protected := aggregate(s)
	meta.SetStatusCondition(&st.Conditions, ready)
	meta.SetStatusCondition(&st.Conditions, protected)
	// A spec whose PVCs cannot be mapped is observed too: its verdict is the
	// error (State stays Unknown, which is what the DRPC waits on).
	if s.mappingError != "" || s.pvcsProcessed {
		st.ObservedGeneration = s.vrg.Generation
	}
}

// observedState is Primary or Secondary once the shared VGR reports the VRG's desired
// state (or, as secondary, when no VGR replicates on this cluster), else Unknown.
func observedState(s *scope) drv1alpha1.State {
	if s.mappingError != "" || !s.consensus {
		return drv1alpha1.UnknownState
	}
	if s.primary() {
		if s.pvcsProcessed && (len(s.pvcs) == 0 || vgrIs(s.vgr, replicationv1alpha1.Primary)) {
			return drv1alpha1.PrimaryState
		}
		return drv1alpha1.UnknownState
	}
	if s.pvcsProcessed && (s.vgr == nil || vgrIs(s.vgr, replicationv1alpha1.Secondary)) {
		return drv1alpha1.SecondaryState
	}
	return drv1alpha1.UnknownState
}

func vgrIs(vgr *replicationv1alpha1.VolumeGroupReplication, desired replicationv1alpha1.ReplicationState) bool {
	return vgr != nil && vgr.Spec.ReplicationState == desired && vgr.Status.State == stateOf(desired)
}

func stateOf(desired replicationv1alpha1.ReplicationState) replicationv1alpha1.State {
	if desired == replicationv1alpha1.Primary {
		return replicationv1alpha1.PrimaryState
	}
	return replicationv1alpha1.SecondaryState
}

// protectedPVCs is status.protectedPVCs for the PVCs processed in this reconcile.
func protectedPVCs(s *scope) []drv1alpha1.ProtectedPVC {
	ready, protected := pvcConditions(s)
	out := make([]drv1alpha1.ProtectedPVC, 0, len(s.pvcs))
	for _, p := range s.pvcs {
		ppvc := drv1alpha1.ProtectedPVC{
			Name:             p.pvc.Name,
			Namespace:        p.pvc.Namespace,
			StorageClassName: storageClassName(p.pvc),
			StorageID:        p.storageID,
		}
		if p.peerClass != nil {
			ppvc.GroupReplicationID = p.peerClass.GroupReplicationID
		}
		if s.vgr != nil {
			ppvc.LastSyncTime = s.vgr.Status.LastSyncTime
		}
		for _, old := range s.before.Status.ProtectedPVCs {
			if old.Name == ppvc.Name && old.Namespace == ppvc.Namespace {
				ppvc.Conditions = slices.Clone(old.Conditions) // never alias s.before
			}
		}
		meta.SetStatusCondition(&ppvc.Conditions, ready)
		meta.SetStatusCondition(&ppvc.Conditions, protected)
		out = append(out, ppvc)
	}
	return out
}

// pvcConditions are the DataReady and DataProtected conditions every PVC of the VRG
// gets from the shared VGR.
func pvcConditions(s *scope) (ready, protected metav1.Condition) {
	gen := s.vrg.Generation
	ready = metav1.Condition{Type: drv1alpha1.ConditionDataReady, ObservedGeneration: gen}
	protected = metav1.Condition{Type: drv1alpha1.ConditionDataProtected, ObservedGeneration: gen}
	progressing := func(msg string) (metav1.Condition, metav1.Condition) {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, drv1alpha1.ReasonProgressing, msg
		protected.Status, protected.Reason, protected.Message = metav1.ConditionFalse, drv1alpha1.ReasonProgressing, msg
		return ready, protected
	}
	desired := replicationv1alpha1.ReplicationState(s.vrg.Spec.ReplicationState)
	vgr := s.vgr
	switch {
	case s.progress != "":
		return progressing(s.progress)
	case vgr == nil:
		return progressing("VolumeGroupReplication " + s.globalName() + " does not exist yet")
	case vgr.Spec.ReplicationState != desired:
		return progressing(fmt.Sprintf("VolumeGroupReplication %s is not yet asked for %s", vgr.Name, desired))
	case vgr.Status.State != stateOf(desired):
		return progressing(fmt.Sprintf("VolumeGroupReplication %s is %q, waiting for %s", vgr.Name, vgr.Status.State, stateOf(desired)))
	}
	readyReason := drv1alpha1.ReasonReady
	if desired == replicationv1alpha1.Secondary {
		readyReason = drv1alpha1.ReasonReplicated
	}
	ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, readyReason, drv1alpha1.MessagePVCReady
	protected.Status, protected.Reason, protected.Message = metav1.ConditionTrue, drv1alpha1.ReasonDataProtected, drv1alpha1.MessagePVCDataProtected
	if zeroInterval(s.vrg) {
		// The provider reports no conditions; the state is enough.
		return ready, protected
	}
	cond := func(t string) *metav1.Condition {
		c := meta.FindStatusCondition(vgr.Status.Conditions, t)
		if c != nil && c.ObservedGeneration != 0 && c.ObservedGeneration < vgr.Generation {
			return nil // stale
		}
		return c
	}
	if c := cond(replicationv1alpha1.ConditionValidated); c != nil && c.Status == metav1.ConditionFalse {
		msg := fmt.Sprintf("VolumeGroupReplication %s failed validation: %s", vgr.Name, c.Message)
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, drv1alpha1.ReasonError, msg
		protected.Status, protected.Reason, protected.Message = metav1.ConditionFalse, drv1alpha1.ReasonError, msg
		return ready, protected
	}
	if c := cond(replicationv1alpha1.ConditionCompleted); c == nil || c.Status != metav1.ConditionTrue {
		return progressing(fmt.Sprintf("VolumeGroupReplication %s has not completed the transition to %s", vgr.Name, desired))
	}
	for _, t := range []string{replicationv1alpha1.ConditionDegraded, replicationv1alpha1.ConditionResyncing} {
		c := cond(t)
		switch {
		case c == nil:
			protected.Status, protected.Reason = metav1.ConditionFalse, drv1alpha1.ReasonProgressing
			protected.Message = fmt.Sprintf("VolumeGroupReplication %s does not report %s", vgr.Name, t)
		case c.Status == metav1.ConditionTrue:
			protected.Status, protected.Reason = metav1.ConditionFalse, drv1alpha1.ReasonProgressing
			protected.Message = fmt.Sprintf("VolumeGroupReplication %s is %s: %s", vgr.Name, t, c.Message)
		default:
			continue
		}
		break
	}
	return ready, protected
}

var intervalPattern = regexp.MustCompile(`^(\d+)[mhd]$`)

// zeroInterval reports a schedulingInterval of zero ("0m", "0h", "0d"): replication
// is managed by the storage provider and its VGR may report no conditions.
func zeroInterval(vrg *drv1alpha1.VolumeReplicationGroup) bool {
	if vrg.Spec.Async == nil {
		return false
	}
	m := intervalPattern.FindStringSubmatch(vrg.Spec.Async.SchedulingInterval)
	if m == nil {
		return false
	}
	n, err := strconv.Atoi(m[1])
	return err == nil && n == 0
}

// aggregate computes the VRG's DataReady and DataProtected from its PVCs. A PVC
// condition older than the VRG's generation counts as Progressing,
// since the consensus gate can hold PVC processing after a spec change.
func aggregate(s *scope) (ready, protected metav1.Condition) {
	return aggregateOne(s, drv1alpha1.ConditionDataReady), aggregateOne(s, drv1alpha1.ConditionDataProtected)
}

func aggregateOne(s *scope, condType string) metav1.Condition {
	gen := s.vrg.Generation
	out := metav1.Condition{Type: condType, ObservedGeneration: gen}
	set := func(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		out.Status, out.Reason, out.Message = status, reason, msg
		return out
	}
	if s.mappingError != "" {
		return set(metav1.ConditionFalse, drv1alpha1.ReasonError, s.mappingError)
	}
	pvcs := s.vrg.Status.ProtectedPVCs
	if len(pvcs) == 0 {
		switch {
		case s.progress != "":
			return set(metav1.ConditionFalse, drv1alpha1.ReasonProgressing, s.progress)
		case !s.pvcsProcessed:
			return set(metav1.ConditionFalse, drv1alpha1.ReasonProgressing, "PVCs not processed yet for generation "+strconv.FormatInt(gen, 10))
		case s.primary():
			return set(metav1.ConditionTrue, drv1alpha1.ReasonUnused, messageNoPVCsAsPrimary)
		default:
			return set(metav1.ConditionTrue, drv1alpha1.ReasonUnused, drv1alpha1.MessageNoPVCsAsSecondary)
		}
	}
	var firstTrue *metav1.Condition
	var progressing, failed string
	for _, p := range pvcs {
		c := meta.FindStatusCondition(p.Conditions, condType)
		switch {
		case c == nil || c.ObservedGeneration < gen:
			if progressing == "" {
				progressing = fmt.Sprintf("PVC %s/%s: not yet processed for generation %d", p.Namespace, p.Name, gen)
			}
		case c.Status == metav1.ConditionTrue:
			if firstTrue == nil {
				firstTrue = c
			}
		case c.Reason == drv1alpha1.ReasonError:
			if failed == "" {
				failed = fmt.Sprintf("PVC %s/%s: %s", p.Namespace, p.Name, c.Message)
			}
		default:
			if progressing == "" {
				progressing = fmt.Sprintf("PVC %s/%s: %s", p.Namespace, p.Name, c.Message)
			}
		}
	}
	switch {
	case failed != "":
		return set(metav1.ConditionFalse, drv1alpha1.ReasonError, failed)
	case progressing != "" && s.progress != "":
		return set(metav1.ConditionFalse, drv1alpha1.ReasonProgressing, s.progress)
	case progressing != "":
		return set(metav1.ConditionFalse, drv1alpha1.ReasonProgressing, progressing)
	default:
		return set(metav1.ConditionTrue, firstTrue.Reason, firstTrue.Message)
	}
}
