package protectiongroup

import (
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// setRunning changes vm's spec so that KubeVirt runs (run=true) or stops it, and
// reports whether anything changed. It keeps the VM's own API style: a VM that uses
// the deprecated spec.running keeps using it; one that uses spec.runStrategy is set
// to Halted and its previous strategy is kept in an annotation so that a start
// restores it. It never sets both fields.
func setRunning(vm *kubevirtv1.VirtualMachine, run bool) bool {
	if vm.Spec.Running != nil {
		if *vm.Spec.Running == run {
			return false
		}
		vm.Spec.Running = &run
		return true
	}
	current := kubevirtv1.RunStrategyAlways
	if vm.Spec.RunStrategy != nil {
		current = *vm.Spec.RunStrategy
	}
	if !run {
		if current == kubevirtv1.RunStrategyHalted {
			return false
		}
		setAnnotation(vm, srv1alpha1.PreviousRunStrategyAnnotation, string(current))
		halted := kubevirtv1.RunStrategyHalted
		vm.Spec.RunStrategy = &halted
		return true
	}
	if current != kubevirtv1.RunStrategyHalted {
		return false
	}
	restore := restoredStrategy(vm.Annotations[srv1alpha1.PreviousRunStrategyAnnotation])
	vm.Spec.RunStrategy = &restore
	delete(vm.Annotations, srv1alpha1.PreviousRunStrategyAnnotation)
	return true
}

// restoredStrategy is the strategy a start restores. Strategies that do not start
// a VM on their own (Halted, Manual, unknown values) become Always, because a start
// that leaves the VM stopped would only time out the failover.
func restoredStrategy(previous string) kubevirtv1.VirtualMachineRunStrategy {
	switch s := kubevirtv1.VirtualMachineRunStrategy(previous); s {
	case kubevirtv1.RunStrategyAlways, kubevirtv1.RunStrategyRerunOnFailure, kubevirtv1.RunStrategyOnce:
		return s
	default:
		return kubevirtv1.RunStrategyAlways
	}
}

// conflictingRunFields reports a VM that sets both spec.running and
// spec.runStrategy, which KubeVirt rejects; the controller leaves such a VM alone.
func conflictingRunFields(vm *kubevirtv1.VirtualMachine) bool {
	return vm.Spec.Running != nil && vm.Spec.RunStrategy != nil
}

func setAnnotation(vm *kubevirtv1.VirtualMachine, key, value string) {
	if vm.Annotations == nil {
		vm.Annotations = map[string]string{}
	}
	vm.Annotations[key] = value
}

// runAsk is what a VM's spec asks of KubeVirt, as far as the group's state
// can tell from it.
type runAsk int

const (
	// askedOther: a strategy whose outcome depends on the guest or on a
	// user (Manual, RerunOnFailure, Once); KubeVirt's status alone tells.
	askedOther runAsk = iota
	askedRun
	askedHalt
)

// asked reads a VM's run fields: spec.running, or spec.runStrategy Always
// and Halted. A VM with neither field is left to KubeVirt's status.
func asked(vm *kubevirtv1.VirtualMachine) runAsk {
	if vm.Spec.Running != nil {
		if *vm.Spec.Running {
			return askedRun
		}
		return askedHalt
	}
	if vm.Spec.RunStrategy == nil {
		return askedOther
	}
	switch *vm.Spec.RunStrategy {
	case kubevirtv1.RunStrategyAlways:
		return askedRun
	case kubevirtv1.RunStrategyHalted:
		return askedHalt
	}
	return askedOther
}
