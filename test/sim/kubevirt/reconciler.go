package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Annotations the simulator keeps on a VirtualMachine.
const (
	// TransitionAnnotation is "Starting" or "Stopping" while a transition is under way.
	TransitionAnnotation = "kubevirt-sim.siterecovery.io/transition"
	// TransitionSinceAnnotation is when the transition began (RFC 3339 with nanoseconds).
	TransitionSinceAnnotation = "kubevirt-sim.siterecovery.io/transition-since"
	// OnceStartedAnnotation marks a runStrategy Once VM whose VMI has been created.
	OnceStartedAnnotation = "kubevirt-sim.siterecovery.io/once-started"
)

// ReasonInvalidRunStrategy is the reason of the Failure condition set on a VM that sets
// both spec.running and spec.runStrategy.
const ReasonInvalidRunStrategy = "InvalidRunStrategy"

const (
	transitionStarting = "Starting"
	transitionStopping = "Stopping"
)

type reconciler struct {
	client client.Client
	// reader reads past the manager's cache so that a VMI just created or deleted is
	// seen at once and transitions do not flap.
	reader client.Reader
	opts   Options
	// written is the resourceVersion of each VM as the simulator's last write of it
	// left it: a VM read older than that (a cache that has not caught up) is not acted
	// on, since the watch event of that write wakes the VM again. Acting on it would
	// write the status it already wrote once more.
	written sync.Map // types.NamespacedName → uint64
}

// stale reports whether vm, as read, is older than the simulator's last write of it.
func (r *reconciler) stale(key types.NamespacedName, vm *kubevirtv1.VirtualMachine) bool {
	w, ok := r.written.Load(key)
	if !ok {
		return false
	}
	rv, err := strconv.ParseUint(vm.ResourceVersion, 10, 64)
	if err != nil || rv >= w.(uint64) {
		r.written.Delete(key)
		return false
	}
	return true
}

// wrote records the resourceVersion a write of vm left it at.
func (r *reconciler) wrote(vm *kubevirtv1.VirtualMachine) {
	if rv, err := strconv.ParseUint(vm.ResourceVersion, 10, 64); err == nil {
		r.written.Store(client.ObjectKeyFromObject(vm), rv)
	}
}

// Reconcile drives one VirtualMachine towards its run strategy.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vm := &kubevirtv1.VirtualMachine{}
	if err := r.reader.Get(ctx, req.NamespacedName, vm); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Delete(req.NamespacedName)
			return ctrl.Result{}, r.deleteOrphanVMI(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	if r.stale(req.NamespacedName, vm) {
		return ctrl.Result{}, nil
	}
	vmi, err := r.getVMI(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if vm.DeletionTimestamp != nil {
		return ctrl.Result{}, r.deleteVMI(ctx, vmi)
	}
	strategy, err := vm.RunStrategy()
	if err != nil {
		return ctrl.Result{}, r.patchStatus(ctx, vm, func(s *kubevirtv1.VirtualMachineStatus) {
			setCondition(s, r.now(), kubevirtv1.VirtualMachineCondition{
				Type:    kubevirtv1.VirtualMachineFailure,
				Status:  "True",
				Reason:  ReasonInvalidRunStrategy,
				Message: "spec.running and spec.runStrategy are mutually exclusive; KubeVirt's admission webhook rejects such a VirtualMachine",
			})
		})
	}
	run := shouldRun(vm, strategy, vmi)
	var res ctrl.Result
	switch {
	case run && vmi == nil:
		res, err = r.start(ctx, vm, strategy)
	case run && r.opts.LauncherPods && vmi.Status.Phase != kubevirtv1.Running:
		err = r.launch(ctx, vm, strategy, vmi)
	case run:
		err = r.settle(ctx, vm, strategy, true)
	case vmi != nil:
		res, err = r.stop(ctx, vm, strategy, vmi)
	default:
		err = r.settle(ctx, vm, strategy, false)
	}
	// A launcher pod that does not run yet, or is not gone yet, wakes the VM
	// again with its own events.
	if errors.Is(err, errLauncherPending) {
		return ctrl.Result{}, nil
	}
	return res, err
}

// shouldRun maps the run strategy to whether a VMI should exist.
func shouldRun(vm *kubevirtv1.VirtualMachine, strategy kubevirtv1.VirtualMachineRunStrategy, vmi *kubevirtv1.VirtualMachineInstance) bool {
	switch strategy {
	case kubevirtv1.RunStrategyAlways, kubevirtv1.RunStrategyRerunOnFailure:
		return true
	case kubevirtv1.RunStrategyManual:
		return vmi != nil || vm.Annotations[TransitionAnnotation] == transitionStarting
	case kubevirtv1.RunStrategyOnce:
		return vmi != nil || vm.Annotations[OnceStartedAnnotation] == ""
	default: // Halted, WaitAsReceiver
		return false
	}
}

// start begins or continues a Starting transition and creates the VMI once StartDelay
// has passed since it began.
func (r *reconciler) start(ctx context.Context, vm *kubevirtv1.VirtualMachine, strategy kubevirtv1.VirtualMachineRunStrategy) (ctrl.Result, error) {
	// An instant simulator skips the Starting status: benchmarks then measure the
	// product, not the simulator's own writes.
	if r.opts.StartDelay > 0 {
		remaining, err := r.beginOrContinue(ctx, vm, strategy, transitionStarting, r.opts.StartDelay)
		if err != nil {
			return ctrl.Result{}, err
		}
		if remaining > 0 {
			return ctrl.Result{RequeueAfter: remaining}, nil
		}
	}
	if err := r.createVMI(ctx, vm); err != nil {
		return ctrl.Result{}, err
	}
	if r.opts.LauncherPods {
		vmi, err := r.getVMI(ctx, client.ObjectKeyFromObject(vm))
		if err != nil || vmi == nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.launch(ctx, vm, strategy, vmi)
	}
	return ctrl.Result{}, r.settle(ctx, vm, strategy, true)
}

// stop begins or continues a Stopping transition and deletes the VMI once StopDelay has
// passed since it began.
func (r *reconciler) stop(ctx context.Context, vm *kubevirtv1.VirtualMachine, strategy kubevirtv1.VirtualMachineRunStrategy, vmi *kubevirtv1.VirtualMachineInstance) (ctrl.Result, error) {
	if r.opts.StopDelay > 0 {
		remaining, err := r.beginOrContinue(ctx, vm, strategy, transitionStopping, r.opts.StopDelay)
		if err != nil {
			return ctrl.Result{}, err
		}
		if remaining > 0 {
			return ctrl.Result{RequeueAfter: remaining}, nil
		}
	}
	if err := r.deleteVMI(ctx, vmi); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.settle(ctx, vm, strategy, false)
}

// beginOrContinue records the transition on the VM if it is not under way yet, shows it
// in the printable status and returns how much of delay is left.
func (r *reconciler) beginOrContinue(ctx context.Context, vm *kubevirtv1.VirtualMachine, strategy kubevirtv1.VirtualMachineRunStrategy, transition string, delay time.Duration) (time.Duration, error) {
	since, err := time.Parse(time.RFC3339Nano, vm.Annotations[TransitionSinceAnnotation])
	if vm.Annotations[TransitionAnnotation] != transition || err != nil {
		since = r.now()
		stamp := since.UTC().Format(time.RFC3339Nano)
		if err := r.patchAnnotations(ctx, vm, map[string]*string{
			TransitionAnnotation:      &transition,
			TransitionSinceAnnotation: &stamp,
		}); err != nil {
			return 0, err
		}
	}
	running := transition == transitionStopping // the VMI still exists while stopping
	err = r.patchStatus(ctx, vm, func(s *kubevirtv1.VirtualMachineStatus) {
		s.PrintableStatus = kubevirtv1.VirtualMachinePrintableStatus(transition)
		s.Created = running
		s.Ready = false
		s.RunStrategy = strategy
		s.ObservedGeneration = vm.Generation
		clearInvalidRunStrategy(s)
		setReady(s, r.now(), false, transition, "VirtualMachine is "+transition)
	})
	return delay - r.opts.Clock.Since(since), err
}

// settle ends any transition and writes the final Running or Stopped status.
func (r *reconciler) settle(ctx context.Context, vm *kubevirtv1.VirtualMachine, strategy kubevirtv1.VirtualMachineRunStrategy, running bool) error {
	annotations := map[string]*string{TransitionAnnotation: nil, TransitionSinceAnnotation: nil}
	switch {
	case strategy == kubevirtv1.RunStrategyOnce && running:
		yes := "true"
		annotations[OnceStartedAnnotation] = &yes
	case strategy != kubevirtv1.RunStrategyOnce:
		annotations[OnceStartedAnnotation] = nil
	}
	if err := r.patchAnnotations(ctx, vm, annotations); err != nil {
		return err
	}
	return r.patchStatus(ctx, vm, func(s *kubevirtv1.VirtualMachineStatus) {
		s.Created = running
		s.Ready = running
		s.RunStrategy = strategy
		s.ObservedGeneration = vm.Generation
		clearInvalidRunStrategy(s)
		if running {
			s.PrintableStatus = kubevirtv1.VirtualMachineStatusRunning
			setReady(s, r.now(), true, "", "")
		} else {
			s.PrintableStatus = kubevirtv1.VirtualMachineStatusStopped
			setReady(s, r.now(), false, "VMINotExists", "VMI does not exist")
		}
	})
}

func (r *reconciler) now() time.Time { return r.opts.Clock.Now() }

func (r *reconciler) getVMI(ctx context.Context, key types.NamespacedName) (*kubevirtv1.VirtualMachineInstance, error) {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := r.reader.Get(ctx, key, vmi); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get VirtualMachineInstance %s: %w", key, err)
	}
	return vmi, nil
}

// deleteOrphanVMI deletes the VMI of a VM that is gone; there is no garbage collector.
func (r *reconciler) deleteOrphanVMI(ctx context.Context, key types.NamespacedName) error {
	vmi, err := r.getVMI(ctx, key)
	if err != nil || vmi == nil {
		return err
	}
	if ref := metav1.GetControllerOf(vmi); ref != nil && ref.Kind == "VirtualMachine" && ref.Name == key.Name {
		return r.deleteVMI(ctx, vmi)
	}
	return nil
}

func (r *reconciler) deleteVMI(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	if vmi == nil {
		return nil
	}
	// qemu exits, closing its disks, before the VMI goes.
	if r.opts.Disks != nil {
		if err := r.opts.Disks.Close(ctx, vmi); err != nil {
			return err
		}
	}
	if r.opts.LauncherPods {
		if gone, err := r.removeLauncher(ctx, vmi); err != nil || !gone {
			if err == nil {
				err = errLauncherPending
			}
			return err
		}
	}
	if err := r.client.Delete(ctx, vmi); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	return nil
}
