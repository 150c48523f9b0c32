package protectiongroup

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// Reasons specific to the ProtectionGroup controller.
const (
	reasonVMFailed        = "VirtualMachineFailed"
	reasonConflictingSpec = "ConflictingRunFields"
)

// setStatus computes the group's status from the scope; it only reads the scope.
func setStatus(s *scope) {
	st := &s.group.Status
	st.ObservedGeneration = s.group.Generation
	st.VirtualMachines = vmStatuses(s)
	st.CurrentState = currentState(s)
	if s.bootSet {
		st.Boot = s.boot
	}
	if s.drbdLoaded {
		st.DRBD = DRBDStatus(s.group, s.replicas, s.taintedNodes, s.applied)
	}
	setReadyCondition(s)
	setDegradedCondition(s)
}

// progressOnly reports whether after differs from before only in what
// reports progress: the VMs' and replicas' entries and the conditions'
// messages. The group's state, observed and applied generations, tainted
// nodes, the conditions' status and reason, and a role all its replicas
// come to share (an event) are never progress.
func progressOnly(before, after *srv1alpha1.ProtectionGroupStatus) bool {
	if to := commonRole(after.DRBD); to != "" && to != commonRole(before.DRBD) {
		return false // recordRoleTransition's event
	}
	return equality.Semantic.DeepEqual(progressShape(before), progressShape(after))
}

// progressShape is st without what progressOnly counts as progress.
func progressShape(st *srv1alpha1.ProtectionGroupStatus) *srv1alpha1.ProtectionGroupStatus {
	out := st.DeepCopy()
	out.VirtualMachines = nil
	if out.DRBD != nil {
		out.DRBD.Replicas = nil
	}
	for i := range out.Conditions {
		out.Conditions[i].Message = ""
		out.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return out
}

func vmStatuses(s *scope) []srv1alpha1.VMStatus {
	previous := map[string]srv1alpha1.VMStatus{}
	for _, v := range s.before.Status.VirtualMachines {
		previous[v.Namespace+"/"+v.Name] = v
	}
	out := make([]srv1alpha1.VMStatus, 0, len(s.vms))
	for _, v := range s.vms {
		st := srv1alpha1.VMStatus{
			Name:            v.ref.Name,
			Namespace:       v.ref.Namespace,
			PrintableStatus: v.printableStatus(),
			Ready:           v.running(),
			Message:         v.message(),
		}
		// since only moves when the VM's state does, so that an unchanged group
		// writes no status.
		if p, ok := previous[v.ref.Namespace+"/"+v.ref.Name]; ok && p.PrintableStatus == st.PrintableStatus && p.Ready == st.Ready && p.Since != nil {
			st.Since = p.Since
		} else {
			st.Since = &metav1.Time{Time: s.now}
		}
		out = append(out, st)
	}
	return out
}

// currentState is running when every VM runs and is ready, stopped when every VM
// is stopped with no VirtualMachineInstance left, degraded when a VM is missing,
// and otherwise the transition towards spec.desiredState.
func currentState(s *scope) srv1alpha1.GroupState {
	allRunning, allStopped := true, true
	for _, v := range s.vms {
		if v.missing() {
			return srv1alpha1.StateDegraded
		}
		allRunning = allRunning && v.running()
		allStopped = allStopped && v.stopped()
	}
	desired := s.group.Spec.DesiredState
	switch {
	case len(s.vms) == 0 && desired != "":
		return desired
	case allRunning && len(s.vms) > 0:
		return srv1alpha1.StateRunning
	case allStopped:
		return srv1alpha1.StateStopped
	case desired == srv1alpha1.StateRunning:
		return srv1alpha1.StateStarting
	case desired == srv1alpha1.StateStopped:
		return srv1alpha1.StateStopping
	default:
		return srv1alpha1.StateDegraded
	}
}

func setReadyCondition(s *scope) {
	g := s.group
	var cond metav1.Condition
	switch {
	case g.Status.CurrentState == srv1alpha1.StateDegraded:
		cond.Status, cond.Reason = metav1.ConditionFalse, srv1alpha1.ReasonVMNotFound
		cond.Message = "missing: " + strings.Join(names(s, vmState.missing), ", ")
	case g.Spec.DesiredState == "" || g.Status.CurrentState == g.Spec.DesiredState:
		cond.Status, cond.Reason = metav1.ConditionTrue, srv1alpha1.ReasonReconciled
		cond.Message = fmt.Sprintf("%d VMs %s", len(s.vms), g.Status.CurrentState)
	default:
		cond.Status, cond.Reason = metav1.ConditionFalse, srv1alpha1.ReasonProgressing
		done := names(s, vmState.running)
		if g.Spec.DesiredState == srv1alpha1.StateStopped {
			done = names(s, vmState.stopped)
		}
		cond.Message = fmt.Sprintf("%d/%d VMs %s", len(done), len(s.vms), g.Spec.DesiredState)
	}
	if len(s.holds) > 0 {
		cond.Message += "; " + strings.Join(s.holds, "; ")
	}
	// Not Ready yet is Reconciling: VMs start or stop, a missing VM comes back
	// with the next pg-sync; nothing here waits for the operator alone.
	flow.SetReady(&g.Status.Conditions, g.Generation, cond.Status, cond.Reason, cond.Message, false)
}

func setDegradedCondition(s *scope) {
	g := s.group
	cond := metav1.Condition{Type: srv1alpha1.ConditionDegraded, ObservedGeneration: g.Generation,
		Status: metav1.ConditionFalse, Reason: srv1alpha1.ReasonReconciled, Message: "every VM is present and healthy"}
	if missing := names(s, vmState.missing); len(missing) > 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, srv1alpha1.ReasonVMNotFound
		cond.Message = "VirtualMachines not found: " + strings.Join(missing, ", ") +
			"; restore them or remove them from spec.virtualMachines"
	} else if failed := names(s, vmState.failed); len(failed) > 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, reasonVMFailed
		cond.Message = "VirtualMachines failing: " + strings.Join(failed, ", ")
	} else if conflicting := names(s, func(v vmState) bool { return v.problem != "" }); len(conflicting) > 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, reasonConflictingSpec
		cond.Message = "VirtualMachines left alone: " + strings.Join(conflicting, ", ")
	}
	meta.SetStatusCondition(&g.Status.Conditions, cond)
}

func names(s *scope, match func(vmState) bool) []string {
	var out []string
	for _, v := range s.vms {
		if match(v) {
			out = append(out, v.ref.Namespace+"/"+v.ref.Name)
		}
	}
	return out
}
