package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// With Options.LauncherPods a VMI runs in a virt-launcher pod, as KubeVirt
// runs it: virt-controller creates the pod, the scheduler places it, the
// kubelet (kwok here) runs it, and the VMI follows its pod
// (kubevirt/kubevirt pkg/virt-controller/watch/vmi.go). The pod carries what
// the scheduler decides on (pkg/virt-controller/services/template.go): the
// VM's resource requests, node selector, affinity and tolerations, and its
// claims, so a DR copy's VM lands where its volumes' node affinity allows or
// stays Scheduling with the scheduler's reason.

// Labels KubeVirt puts on a launcher pod (kubevirt.io/api core/v1 types.go).
const (
	launcherAppLabel = "kubevirt.io"
	launcherAppValue = "virt-launcher"
	createdByLabel   = "kubevirt.io/created-by"
	vmNameLabel      = "vm.kubevirt.io/name"
)

// launcherOverhead is added to the guest's memory: the launcher's own
// processes (virt-launcher, libvirt, qemu) need memory beyond the guest's,
// which KubeVirt adds to the pod's request (renderresources.go,
// GetMemoryOverhead). A fixed figure is enough for scheduling decisions.
var launcherOverhead = resource.MustParse("256Mi")

// launcherName is the VMI's launcher pod. KubeVirt uses a generated name; a
// name derived from the VMI's UID lets the simulator find it without a list.
func launcherName(vmi *kubevirtv1.VirtualMachineInstance) string {
	uid := string(vmi.UID)
	if len(uid) > 5 {
		uid = uid[:5]
	}
	return "virt-launcher-" + vmi.Name + "-" + uid
}

// launcherPod renders vmi's virt-launcher pod.
func launcherPod(vmi *kubevirtv1.VirtualMachineInstance) *corev1.Pod {
	labels := maps.Clone(vmi.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[launcherAppLabel] = launcherAppValue
	labels[createdByLabel] = string(vmi.UID)
	labels[vmNameLabel] = vmi.Name
	requests := corev1.ResourceList{}
	maps.Copy(requests, vmi.Spec.Domain.Resources.Requests)
	memory := requests.Memory().DeepCopy()
	if memory.IsZero() && vmi.Spec.Domain.Memory != nil && vmi.Spec.Domain.Memory.Guest != nil {
		memory = vmi.Spec.Domain.Memory.Guest.DeepCopy()
	}
	memory.Add(launcherOverhead)
	requests[corev1.ResourceMemory] = memory
	if requests.Cpu().IsZero() {
		requests[corev1.ResourceCPU] = resource.MustParse("100m")
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: vmi.Namespace, Name: launcherName(vmi), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vmi, kubevirtv1.VirtualMachineInstanceGroupVersionKind)},
		},
		Spec: corev1.PodSpec{
			NodeSelector:                  vmi.Spec.NodeSelector,
			Affinity:                      vmi.Spec.Affinity,
			Tolerations:                   vmi.Spec.Tolerations,
			TerminationGracePeriodSeconds: vmi.Spec.TerminationGracePeriodSeconds,
			AutomountServiceAccountToken:  ptr.To(false),
			// KubeVirt's non-root launcher: no privilege, as PodSecurity
			// baseline (the default here) demands.
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "compute", Image: "quay.io/kubevirt/virt-launcher",
				Resources: corev1.ResourceRequirements{Requests: requests},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		},
	}
	for _, v := range vmi.Spec.Volumes {
		claim := ""
		switch {
		case v.PersistentVolumeClaim != nil:
			claim = v.PersistentVolumeClaim.ClaimName
		case v.DataVolume != nil:
			claim = v.DataVolume.Name // a DataVolume's claim has its name
		default:
			continue
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
	return pod
}

// errLauncherPending reports a VMI whose pod does not run yet; its pod's
// events wake the VM again.
var errLauncherPending = errors.New("launcher pod not running")

// runLauncher creates vmi's launcher pod if it has none and brings the VMI
// to Running on the pod's node once the pod runs there. Until then the VMI is
// Scheduling (or Scheduled) and, when the scheduler cannot place the pod,
// carries its PodScheduled condition, which KubeVirt copies from the pod.
func (r *reconciler) runLauncher(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	pod := &corev1.Pod{}
	err := r.reader.Get(ctx, types.NamespacedName{Namespace: vmi.Namespace, Name: launcherName(vmi)}, pod)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.client.Create(ctx, launcherPod(vmi)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create launcher pod of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
		}
		return errLauncherPending
	case err != nil:
		return err
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Spec.NodeName == "" {
		phase := kubevirtv1.Scheduling
		if pod.Spec.NodeName != "" {
			phase = kubevirtv1.Scheduled
		}
		var conds []kubevirtv1.VirtualMachineInstanceCondition
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				conds = append(conds, kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceConditionType(c.Type),
					Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime})
			}
		}
		if err := r.setVMIStatus(ctx, vmi, func(s *kubevirtv1.VirtualMachineInstanceStatus) {
			s.Phase, s.NodeName, s.Conditions = phase, pod.Spec.NodeName, conds
		}); err != nil {
			return err
		}
		return errLauncherPending
	}
	if vmi.Status.Phase == kubevirtv1.Running {
		return nil
	}
	if err := r.setVMIStatus(ctx, vmi, func(s *kubevirtv1.VirtualMachineInstanceStatus) {
		s.NodeName = pod.Spec.NodeName
	}); err != nil {
		return err
	}
	// qemu opens the disks on the pod's node before the guest runs.
	if err := r.openDisks(ctx, vmi); err != nil {
		return err
	}
	now := metav1.NewTime(r.now())
	return r.setVMIStatus(ctx, vmi, func(s *kubevirtv1.VirtualMachineInstanceStatus) {
		s.Phase = kubevirtv1.Running
		s.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		s.Interfaces = interfaceStatuses(vmi, pod)
		s.PhaseTransitionTimestamps = append(s.PhaseTransitionTimestamps, kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: kubevirtv1.Running, PhaseTransitionTimestamp: now})
	})
}

// removeLauncher deletes vmi's launcher pod and reports whether it is gone:
// a VMI goes only after its pod has (virt-controller keeps the VMI's
// finalizer until then).
func (r *reconciler) removeLauncher(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
	pod := &corev1.Pod{}
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: vmi.Namespace, Name: launcherName(vmi)}, pod); err != nil {
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}
	if pod.DeletionTimestamp.IsZero() {
		if err := r.client.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete launcher pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return false, nil
}

// setVMIStatus writes vmi's status changed by mutate, through the status
// subresource when the CRD has one and with the object when it has not.
func (r *reconciler) setVMIStatus(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, mutate func(*kubevirtv1.VirtualMachineInstanceStatus)) error {
	updated := vmi.DeepCopy()
	mutate(&updated.Status)
	err := r.client.Status().Update(ctx, updated)
	if apierrors.IsNotFound(err) {
		err = r.client.Update(ctx, updated)
	}
	if err != nil {
		return fmt.Errorf("set status of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	*vmi = *updated
	return nil
}

// vmOfLauncher maps a launcher pod to its VM, which the simulator reconciles.
func vmOfLauncher(_ context.Context, o client.Object) []reconcile.Request {
	if o.GetLabels()[launcherAppLabel] != launcherAppValue || o.GetLabels()[vmNameLabel] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetLabels()[vmNameLabel]}}}
}

// launch runs vmi's launcher and, once the VMI runs, settles the VM Running.
// Until then the VM shows Starting, or ErrorUnschedulable with the VMI's
// PodScheduled condition when the scheduler cannot place the pod, as
// KubeVirt's VM controller shows it (pkg/virt-controller/watch/vm.go copies
// the VMI's conditions; printable status from
// pkg/virt-controller/watch/vm_printablestatus.go or its predecessor).
func (r *reconciler) launch(ctx context.Context, vm *kubevirtv1.VirtualMachine, strategy kubevirtv1.VirtualMachineRunStrategy, vmi *kubevirtv1.VirtualMachineInstance) error {
	err := r.runLauncher(ctx, vmi)
	if err == nil {
		return r.settle(ctx, vm, strategy, true)
	}
	if !errors.Is(err, errLauncherPending) {
		return err
	}
	printable := kubevirtv1.VirtualMachineStatusStarting
	var scheduled *kubevirtv1.VirtualMachineInstanceCondition
	for i, c := range vmi.Status.Conditions {
		if string(c.Type) == string(corev1.PodScheduled) && c.Status == corev1.ConditionFalse {
			scheduled = &vmi.Status.Conditions[i]
		}
	}
	if scheduled != nil && scheduled.Reason == corev1.PodReasonUnschedulable {
		printable = kubevirtv1.VirtualMachineStatusUnschedulable
	}
	if perr := r.patchStatus(ctx, vm, func(s *kubevirtv1.VirtualMachineStatus) {
		s.PrintableStatus = printable
		s.Created, s.Ready = true, false
		s.RunStrategy = strategy
		s.ObservedGeneration = vm.Generation
		kept := s.Conditions[:0]
		for _, c := range s.Conditions {
			if string(c.Type) != string(corev1.PodScheduled) {
				kept = append(kept, c)
			}
		}
		s.Conditions = kept
		if scheduled != nil {
			setCondition(s, r.now(), kubevirtv1.VirtualMachineCondition{Type: kubevirtv1.VirtualMachineConditionType(corev1.PodScheduled),
				Status: scheduled.Status, Reason: scheduled.Reason, Message: scheduled.Message})
		}
		setReady(s, r.now(), false, "VMINotReady", "waiting for the virt-launcher pod to run")
	}); perr != nil {
		return perr
	}
	return err
}

// interfaceStatuses is what KubeVirt reports of a running VMI's interfaces:
// the pod network's first, with the launcher pod's IP (virt-handler's
// NetStat.UpdateStatus, kubevirt pkg/network/netstat, puts the pod network's
// interface first and gives it the pod interface's address), then each
// Multus network's with its MAC (virt-controller's UpdateVMIStatus, kubevirt
// pkg/network/controllers/vmi.go: primary, then secondary interfaces). A
// secondary's IP would come from the guest agent, which plays no part here.
func interfaceStatuses(vmi *kubevirtv1.VirtualMachineInstance, pod *corev1.Pod) []kubevirtv1.VirtualMachineInstanceNetworkInterface {
	macs := map[string]string{}
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		macs[iface.Name] = iface.MacAddress
	}
	var primary, secondary []kubevirtv1.VirtualMachineInstanceNetworkInterface
	for _, n := range vmi.Spec.Networks {
		st := kubevirtv1.VirtualMachineInstanceNetworkInterface{Name: n.Name, MAC: macs[n.Name]}
		switch {
		case n.Pod != nil || (n.Multus != nil && n.Multus.Default):
			st.IP, st.PodInterfaceName = pod.Status.PodIP, "eth0"
			for _, ip := range pod.Status.PodIPs {
				st.IPs = append(st.IPs, ip.IP)
			}
			primary = append(primary, st)
		case n.Multus != nil:
			secondary = append(secondary, st)
		}
	}
	return append(primary, secondary...)
}
