// Package kubevirt is a test fixture that plays KubeVirt's virt-controller for
// VirtualMachines in clusters that have the KubeVirt CRDs but no KubeVirt (envtest
// clusters started by test/harness). It is never product code.
//
// From spec.runStrategy (or the deprecated spec.running) the simulator decides whether a
// VirtualMachine should run. Starting takes Options.StartDelay: the VM shows printable
// status Starting, then a VirtualMachineInstance of the same name (controlled by the VM,
// phase Running, Ready condition) is created and the VM becomes Running, ready and
// created. Stopping takes Options.StopDelay: the VM shows Stopping, then the VMI is deleted
// and the VM becomes Stopped, not ready, not created.
//
// Run strategies: Always and RerunOnFailure run; Halted (and WaitAsReceiver) stop; Manual
// keeps the current state (running iff a VMI exists or a start is under way); Once runs
// until a VMI has been created once and is not restarted after the VMI is gone. Neither
// field set means Halted, as in KubeVirt.
//
// A VM that sets both spec.running and spec.runStrategy is rejected by KubeVirt's
// admission webhook ("mutually exclusive"); test/harness installs admission policies
// that refuse it the same way. On a cluster without them the simulator instead sets
// the VM condition Failure=True with reason ReasonInvalidRunStrategy and leaves the
// VMI and printable status alone until the spec is fixed.
//
// Transitions are timed without sleeping: the annotations TransitionAnnotation and
// TransitionSinceAnnotation on the VM record which transition began when, and the
// reconciler requeues with RequeueAfter for the remaining delay. Deleting a VM deletes
// its VMI (envtest runs no garbage collector).
package kubevirt
