package kubevirt

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

var notIgnored = predicate.NewPredicateFuncs(func(o client.Object) bool {
	_, ignored := o.GetLabels()[IgnoreLabel]
	return !ignored
})

// ControllerName is the name of the simulator's controller in a manager.
const ControllerName = "kubevirt-simulator"

// IgnoreLabel marks VirtualMachines and VirtualMachineInstances the simulator
// leaves alone: a benchmark's floor makes KubeVirt's writes itself, with a plain
// client, on objects of a namespace of its own in the same cluster.
const IgnoreLabel = "kubevirt-sim.siterecovery.io/ignore"

// Options tune the simulator.
type Options struct {
	// StartDelay is how long a VM shows Starting before its VMI runs.
	StartDelay time.Duration
	// StopDelay is how long a VM shows Stopping before its VMI is deleted.
	StopDelay time.Duration
	// Clock measures the delays; nil means the real clock.
	Clock clock.PassiveClock
	// NodeName is the status.nodeName of every VMI; SimulatedNodeName by default.
	NodeName string
	// LauncherPods runs each VMI in a virt-launcher pod that kube-scheduler
	// places and kwok runs (launcher.go); the VMI's node is its pod's. For
	// clusters with the full control plane. Without it a VMI runs at once on
	// NodeName.
	LauncherPods bool
	// Disks, when set, holds a VMI's disks as its qemu does: opened before the
	// VMI runs (a disk that cannot be opened keeps the VM Starting, retried),
	// closed before the VMI is deleted.
	Disks DiskHolder
}

// DiskHolder opens and closes the devices behind a VMI's volumes.
type DiskHolder interface {
	Open(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error
	Close(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error
}

// SetupWithManager registers the simulator with mgr. kubevirtv1 must be in the manager's
// scheme (kubevirtv1.AddToScheme). Several managers in one process (one per cluster) may
// each run a simulator.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.NodeName == "" {
		opts.NodeName = SimulatedNodeName
	}
	// With delays, transitions are recorded in annotations that a stale cache
	// would replay, so reads go to the API server. An instant simulator has no
	// transitions: it reads from the cache, and a benchmark measures the
	// product rather than the simulator's reads.
	reader := mgr.GetAPIReader()
	if opts.StartDelay == 0 && opts.StopDelay == 0 {
		reader = mgr.GetClient()
	}
	skip := true
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&kubevirtv1.VirtualMachine{}, builder.WithPredicates(notIgnored)).
		Owns(&kubevirtv1.VirtualMachineInstance{}, builder.WithPredicates(notIgnored)).
		WithOptions(controller.Options{SkipNameValidation: &skip, MaxConcurrentReconciles: 8})
	if opts.LauncherPods {
		b = b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(vmOfLauncher))
	}
	return b.Complete(&reconciler{client: mgr.GetClient(), reader: reader, opts: opts})
}
