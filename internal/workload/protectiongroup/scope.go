package protectiongroup

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/bootplan"
)

// scope is what one reconcile of a ProtectionGroup works on.
type scope struct {
	group *srv1alpha1.ProtectionGroup
	// before is the group as read, to patch only what changed.
	before *srv1alpha1.ProtectionGroup
	now    time.Time
	// vms holds every VM of spec.virtualMachines, in spec order.
	vms []vmState
	// loaded is true once vms reflects the cluster.
	loaded bool

	// replicas are the group's DRBDResources on the cluster, and taintedNodes
	// those of their nodes with the lost-quorum taint; drbdLoaded is true once
	// both reflect the cluster.
	replicas     []srv1alpha1.DRBDResource
	taintedNodes []string
	drbdLoaded   bool
	// applied is true once every replica carries spec.drbd.
	applied bool
	// holds says why a half of the spec waits for the other (gates.go).
	holds []string
	// asked is true when this reconcile asked a VM or a replica to change.
	asked bool
	// boot is the boot plan's status this reconcile decided, and bootSet
	// true once it did (nil then clears it); bootAfter is when the stage
	// under way times out.
	boot      *srv1alpha1.BootStatus
	bootSet   bool
	bootAfter time.Duration
}

// vmState is one VM of the group as the cluster shows it.
type vmState struct {
	ref srv1alpha1.VirtualMachineReference
	// vm is nil when the VirtualMachine does not exist.
	vm *kubevirtv1.VirtualMachine
	// hasVMI is true while a VirtualMachineInstance exists for the VM, and
	// vmiRunning while that instance runs and is not being deleted.
	hasVMI, vmiRunning bool
	// ask is what the VM's spec asks of KubeVirt, or what this controller's
	// last patch asked where the cached VM does not show that patch yet.
	ask runAsk
	// problem explains why the controller could not act on the VM.
	problem string
	// held says which boot stage the VM waits for before it may start.
	held string
	// instance is what a boot plan's gates read of the VM's instance.
	instance bootplan.Facts
}

func (v vmState) key() string { return v.ref.Namespace + "/" + v.ref.Name }

func (v vmState) missing() bool { return v.vm == nil }

// message explains a problem with the VM: the controller's own, else why
// KubeVirt cannot start it. KubeVirt copies the launcher pod's PodScheduled
// condition to the VM; when the scheduler cannot place the pod (no node with
// room for it where its volumes can attach), that is what keeps a failed-over
// VM from booting, and the operator reads it here and in the request.
func (v vmState) message() string {
	if v.problem != "" || v.vm == nil {
		return v.problem
	}
	if v.held != "" {
		return v.held
	}
	for _, c := range v.vm.Status.Conditions {
		if string(c.Type) == string(corev1.PodScheduled) && c.Status == corev1.ConditionFalse && c.Message != "" {
			return "cannot be scheduled: " + c.Message
		}
	}
	return ""
}

func (v vmState) printableStatus() string {
	if v.vm == nil {
		return "Missing"
	}
	return string(v.vm.Status.PrintableStatus)
}

// running: KubeVirt reports the VM running and ready, its instance runs,
// and its spec does not ask it to stop. A VM just asked to stop is stopping,
// not running, although KubeVirt has not said so yet: the group's state moves
// with the ask, in the same status write, instead of one write later. The
// instance is checked too because the VM's own status trails it: a VM
// stopped and at once asked to run again can still report the Running of
// its previous instance, which is gone or not started yet.
func (v vmState) running() bool {
	return v.vm != nil && v.vm.Status.PrintableStatus == kubevirtv1.VirtualMachineStatusRunning && v.vm.Status.Ready &&
		v.vmiRunning && v.ask != askedHalt
}

// stopped: the VM has no VirtualMachineInstance, and either KubeVirt reports
// it Stopped or its spec asks it to stay halted (KubeVirt's own status of a
// halted VM without an instance trails the instance's deletion). A VM asked
// to run is not stopped, whatever KubeVirt reports yet: it is starting.
func (v vmState) stopped() bool {
	if v.vm == nil || v.hasVMI {
		return false
	}
	switch v.ask {
	case askedRun:
		return false
	case askedHalt:
		return true
	}
	return v.vm.Status.PrintableStatus == kubevirtv1.VirtualMachineStatusStopped
}

// failed reports the printable statuses from which KubeVirt does not recover
// without help.
func (v vmState) failed() bool {
	if v.vm == nil {
		return false
	}
	switch v.vm.Status.PrintableStatus {
	case kubevirtv1.VirtualMachineStatusCrashLoopBackOff, kubevirtv1.VirtualMachineStatusUnschedulable,
		kubevirtv1.VirtualMachineStatusErrImagePull, kubevirtv1.VirtualMachineStatusImagePullBackOff,
		kubevirtv1.VirtualMachineStatusPvcNotFound, kubevirtv1.VirtualMachineStatusDataVolumeError:
		return true
	}
	return false
}
