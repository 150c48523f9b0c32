package testfailover

import (
	"crypto/sha256"
	"fmt"
	"strings"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Labels on everything the controller creates on the DR cluster. Cleanup finds
// its objects by LabelUID alone, so a deleted and re-created request of the same
// name never adopts or deletes the previous one's objects.
const (
	// LabelName is the TestFailover's name.
	LabelName = "siterecovery.trilio.io/test-failover"
	// LabelUID is the TestFailover's UID.
	LabelUID = "siterecovery.trilio.io/test-failover-uid"
	// LabelDRNamespace is the TestFailover's namespace on the quorum cluster.
	LabelDRNamespace = "siterecovery.trilio.io/dr-namespace"
	// LabelVM names, on test objects, the production VM they stand for.
	LabelVM = "siterecovery.trilio.io/test-vm"
	// LabelComponent tells a test VM's pods (ComponentVM) from its probe's
	// (ComponentProbe): both carry the same LabelUID and LabelVM, and the probe
	// Service must select the VM alone, or the probe could reach itself.
	LabelComponent = "siterecovery.trilio.io/test-component"

	// ComponentVM is LabelComponent on a test VM's template, so on its
	// virt-launcher pod (KubeVirt copies the template's labels to it).
	ComponentVM = "vm"
	// ComponentProbe is LabelComponent on a probe Job and its pod.
	ComponentProbe = "probe"
	// ComponentBoot is LabelComponent on the boot plan's step and gate Jobs
	// and their pods (boot.go).
	ComponentBoot = "boot"

	// AnnotationSourcePVC records, on a snapshot, the production PVC it copies.
	AnnotationSourcePVC = "siterecovery.trilio.io/source-pvc"

	// Finalizer keeps a TestFailover until everything it created is gone.
	Finalizer = "siterecovery.trilio.io/test-failover-cleanup"
)

// Check names in status.results.
const (
	CheckVMReady    = "VMReady"
	CheckGuestAgent = "GuestAgent"
	CheckProbe      = "Probe"
)

// Condition types besides Ready.
const (
	// ConditionCleanedUp is True once nothing the test created is left.
	ConditionCleanedUp = "CleanedUp"
	// ConditionVerified holds the verdict of the checks (or why they never ran)
	// from the moment cleanup starts; Ready copies it when cleanup ends.
	ConditionVerified = "Verified"
)

// Reasons on the Ready and Verified conditions.
const (
	ReasonPassed          = "ChecksPassed"
	ReasonChecksFailed    = "ChecksFailed"
	ReasonTimeout         = "Timeout"
	ReasonDeleted         = "Deleted"
	ReasonNamespaceExists = "NamespaceExists"
	ReasonNoDisks         = "NoReplicatedDisks"
	ReasonStandbyMissing  = "StandbyVMNotFound"
	// ReasonNoSnapshotClass: no VolumeSnapshotClass on the DR cluster fits a
	// disk's CSI driver (none, or several and not one default); nothing is
	// snapshotted.
	ReasonNoSnapshotClass = "NoVolumeSnapshotClass"
	// ReasonReplicaNotUpToDate: a DR replica to snapshot is not UpToDate (an
	// initial sync or a resync under way, or Outdated); nothing is booted.
	ReasonReplicaNotUpToDate = "ReplicaNotUpToDate"
	ReasonCleanedUp          = "CleanedUp"
	ReasonCleaning           = "CleaningUp"
)

// isolatedNamespace is the namespace the test VMs run in.
func isolatedNamespace(tf *srv1alpha1.TestFailover) string {
	if tf.Spec.IsolatedNamespace != "" {
		return tf.Spec.IsolatedNamespace
	}
	return truncate("sr-test-" + tf.Name)
}

func labelsOf(tf *srv1alpha1.TestFailover, vm string) map[string]string {
	l := map[string]string{
		srv1alpha1.ManagedByLabel: srv1alpha1.ManagedByValue,
		LabelName:                 truncate(tf.Name),
		LabelUID:                  string(tf.UID),
		LabelDRNamespace:          tf.Namespace,
	}
	if vm != "" {
		l[LabelVM] = truncate(vm)
	}
	return l
}

// objectName is a deterministic DNS-1123 label made of parts, shortened with a
// hash when too long.
func objectName(parts ...string) string {
	return truncate(strings.ToLower(strings.Join(parts, "-")))
}

func truncate(s string) string {
	if len(s) <= 63 {
		return s
	}
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte(s)))[:10]
	return strings.TrimRight(s[:52], "-.") + "-" + sum
}

// snapshotName is the production-side snapshot of one disk; the same name is used
// for its copy, the restored PVC, in the isolated namespace.
func snapshotName(tf *srv1alpha1.TestFailover, vm, volume string) string {
	return objectName("srtest", tf.Name, vm, volume)
}

// contentName is the pre-provisioned VolumeSnapshotContent that carries a
// snapshot into the isolated namespace.
func contentName(tf *srv1alpha1.TestFailover, vm, volume string) string {
	return objectName("srtest", string(tf.UID)[:8], vm, volume)
}

func probeName(vm string) string { return objectName("probe", vm) }

// componentLabels are labelsOf(tf, vm) with LabelComponent set to component.
func componentLabels(tf *srv1alpha1.TestFailover, vm, component string) map[string]string {
	l := labelsOf(tf, vm)
	l[LabelComponent] = component
	return l
}

// probeSelector selects the launcher pod of one test VM, never its probe pod.
func probeSelector(tf *srv1alpha1.TestFailover, vm string) map[string]string {
	l := componentLabels(tf, vm, ComponentVM)
	return map[string]string{LabelUID: l[LabelUID], LabelVM: l[LabelVM], LabelComponent: ComponentVM}
}
