package vrg

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/workload/volsync/rgs"
)

// setVolSyncStatus computes the status of a VRG on the VolSync path from its
// RGSs or RGDs: a group is ready once its half exists and healthy, and
// protected once it completed a cycle; lastGroupSyncTime is the oldest
// group's last complete cycle.
func setVolSyncStatus(s *scope) {
	st := &s.vrg.Status
	ready, protected := volSyncConditions(s)
	if s.pvcsProcessed {
		st.ProtectedPVCs = volSyncProtectedPVCs(s, ready, protected)
		st.LastGroupSyncTime = oldestSync(s)
		st.ObservedGeneration = s.vrg.Generation
		st.State = drv1alpha1.SecondaryState
		if s.primary() {
			st.State = drv1alpha1.PrimaryState
		}
	} else {
		st.State = drv1alpha1.UnknownState
	}
	if st.ProtectedPVCs == nil {
		st.ProtectedPVCs = []drv1alpha1.ProtectedPVC{}
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	meta.SetStatusCondition(&st.Conditions, protected)
	setFinalSynced(s)
}

// setFinalSynced reports on a primary whether every group completed the final
// sync spec.volSync.finalSync asks for; without one the condition goes.
func setFinalSynced(s *scope) {
	final := finalSync(s.vrg)
	if final == "" || !s.primary() {
		meta.RemoveStatusCondition(&s.vrg.Status.Conditions, drv1alpha1.ConditionFinalSynced)
		return
	}
	c := metav1.Condition{Type: drv1alpha1.ConditionFinalSynced, ObservedGeneration: s.vrg.Generation,
		Status: metav1.ConditionTrue, Reason: drv1alpha1.ReasonDataProtected, Message: "every consistency group completed final sync " + final}
	var pending []string
	for _, g := range s.sources {
		if g.Status.LastManualSync != final {
			pending = append(pending, g.Name)
		}
	}
	switch {
	case !s.pvcsProcessed || len(s.sources) == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, drv1alpha1.ReasonProgressing, "the consistency groups are not set up yet"
	case len(pending) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, drv1alpha1.ReasonProgressing,
			fmt.Sprintf("final sync %s running for %s", final, strings.Join(pending, ", "))
	}
	meta.SetStatusCondition(&s.vrg.Status.Conditions, c)
}

// groupSync is the last complete cycle and health of one group's half.
type groupSync struct {
	name     string
	lastSync *metav1.Time
	problem  string
}

func groupSyncs(s *scope) []groupSync {
	var out []groupSync
	for _, g := range s.sources {
		gs := groupSync{name: "ReplicationGroupSource " + g.Name, lastSync: g.Status.LastSyncTime}
		// A cycle waiting in one of its normal steps (the snapshot, the
		// restores, the sync) is no problem: counted as one, DataProtected
		// went False during every cycle. Lag past the objective is what tells
		// a step that never ends.
		if c := meta.FindStatusCondition(g.Status.Conditions, srv1alpha1.ConditionReady); c != nil &&
			c.Status == metav1.ConditionFalse && !rgs.IsCycleStep(c.Reason) {
			gs.problem = c.Message
		}
		out = append(out, gs)
	}
	for _, g := range s.destinations {
		out = append(out, groupSync{name: "ReplicationGroupDestination " + g.Name, lastSync: g.Status.LastSyncTime})
	}
	return out
}

func volSyncConditions(s *scope) (ready, protected metav1.Condition) {
	gen := s.vrg.Generation
	ready = metav1.Condition{Type: drv1alpha1.ConditionDataReady, ObservedGeneration: gen}
	protected = metav1.Condition{Type: drv1alpha1.ConditionDataProtected, ObservedGeneration: gen}
	set := func(status metav1.ConditionStatus, reason, msg string) {
		ready.Status, ready.Reason, ready.Message = status, reason, msg
		protected.Status, protected.Reason, protected.Message = status, reason, msg
	}
	switch {
	case s.refused != "":
		set(metav1.ConditionFalse, ReasonKeyRefused, s.refused)
		return ready, protected
	case s.progress != "":
		set(metav1.ConditionFalse, drv1alpha1.ReasonProgressing, s.progress)
		return ready, protected
	case !s.pvcsProcessed:
		set(metav1.ConditionFalse, drv1alpha1.ReasonProgressing, "the VolSync consistency groups are not set up yet")
		return ready, protected
	}
	readyReason := drv1alpha1.ReasonReady
	if !s.primary() {
		readyReason = drv1alpha1.ReasonReplicated
	}
	ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, readyReason, drv1alpha1.MessagePVCReady
	protected.Status, protected.Reason, protected.Message = metav1.ConditionTrue, drv1alpha1.ReasonDataProtected, drv1alpha1.MessagePVCDataProtected
	// A failing cycle leaves the primary's PVCs usable: it is a replication
	// problem, so only DataProtected says so. Were DataReady to drop, an
	// unplanned failover with the link down would wait forever for the new
	// primary, whose first cycle cannot reach the lost site.
	syncs := groupSyncs(s)
	for _, g := range syncs {
		if g.problem != "" {
			protected.Status, protected.Reason, protected.Message = metav1.ConditionFalse, drv1alpha1.ReasonError, fmt.Sprintf("%s: %s", g.name, g.problem)
			return ready, protected
		}
	}
	for _, g := range syncs {
		if g.lastSync == nil {
			protected.Status, protected.Reason, protected.Message = metav1.ConditionFalse, drv1alpha1.ReasonProgressing,
				g.name+" has not completed a sync cycle yet"
			break
		}
	}
	return ready, protected
}

// oldestSync is the last time every group had completed a cycle; nil until
// each has.
func oldestSync(s *scope) *metav1.Time {
	var oldest *metav1.Time
	for _, g := range groupSyncs(s) {
		if g.lastSync == nil {
			return nil
		}
		if oldest == nil || g.lastSync.Before(oldest) {
			oldest = g.lastSync
		}
	}
	return oldest
}

func volSyncProtectedPVCs(s *scope, ready, protected metav1.Condition) []drv1alpha1.ProtectedPVC {
	var out []drv1alpha1.ProtectedPVC
	lastSync := func(sc string) *metav1.Time {
		name := groupName(s.vrg.Name, consistencyGroupKey(sc))
		for _, g := range s.sources {
			if g.Name == name {
				return g.Status.LastSyncTime
			}
		}
		for _, g := range s.destinations {
			if g.Name == name {
				return g.Status.LastSyncTime
			}
		}
		return nil
	}
	add := func(p drv1alpha1.ProtectedPVC) {
		p.LastSyncTime = lastSync(p.StorageClassName)
		for _, old := range s.before.Status.ProtectedPVCs {
			if old.Name == p.Name && old.Namespace == p.Namespace {
				p.Conditions = slices.Clone(old.Conditions)
			}
		}
		meta.SetStatusCondition(&p.Conditions, ready)
		meta.SetStatusCondition(&p.Conditions, protected)
		out = append(out, p)
	}
	if s.primary() {
		for _, p := range s.pvcs {
			add(drv1alpha1.ProtectedPVC{Name: p.pvc.Name, Namespace: p.pvc.Namespace, StorageClassName: storageClassName(p.pvc), StorageID: p.storageID,
				ProtectedByVolSync: true, Labels: appLabels(p.pvc.Labels), AccessModes: p.pvc.Spec.AccessModes, Resources: p.pvc.Spec.Resources,
				VolumeMode: p.pvc.Spec.VolumeMode})
		}
		return out
	}
	for _, spec := range s.vrg.Spec.VolSync.RDSpecs {
		p := spec.ProtectedPVC
		ns := p.Namespace
		if ns == "" {
			ns = s.vrg.Namespace
		}
		add(drv1alpha1.ProtectedPVC{Name: p.Name, Namespace: ns, StorageClassName: ptr.Deref(p.StorageClassName, ""),
			ProtectedByVolSync: true, Labels: p.Labels, AccessModes: p.AccessModes, Resources: p.Resources, VolumeMode: p.VolumeMode,
			DestinationAddress: destinationAddress(s, p)})
	}
	return out
}

// destinationAddress is where the destination of a PVC a secondary receives
// listens, as its group's RGD recorded it; the quorum tier relays it to the
// primary.
func destinationAddress(s *scope, p drv1alpha1.VolSyncProtectedPVC) string {
	name := groupName(s.vrg.Name, consistencyGroupKey(ptr.Deref(p.StorageClassName, "")))
	for _, g := range s.destinations {
		if g.Name != name {
			continue
		}
		for _, d := range g.Status.Destinations {
			if d.PVCName == p.Name {
				return d.Address
			}
		}
	}
	return ""
}

// appLabels are a PVC's labels without the consistency-group label this
// controller puts on it: what the receiving PVC needs to be selected again.
func appLabels(l map[string]string) map[string]string {
	out := maps.Clone(l)
	delete(out, drv1alpha1.ConsistencyGroupLabel)
	if len(out) == 0 {
		return nil
	}
	return out
}
