package setup

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/bootplan"
)

// CacheByObject scopes pg-controller's cache of the kinds every workload
// cluster holds by the thousand to the fields its controllers read. It must
// watch them cluster-wide: any Pod or VirtualMachineInstance that mounts a
// protected PVC holds its VolumeReplicationGroup primary, whatever its labels
// or namespace, and the VMs of a group are named by the group, not labelled.
// What it keeps:
//   - Pods: the PVCs they mount and their phase (is a PVC still in use);
//   - VirtualMachineInstances: the same (in use), that they exist (a
//     group's VM is running), and what a boot plan's gates read: the Ready
//     and AgentConnected conditions (type and status) and the first
//     interface's address;
//   - VirtualMachines: metadata, the run fields and status (the group drives
//     and reports them); not the template, which the VM's own KubeVirt
//     controller reads, nor its data volume templates;
//   - Nodes: metadata and taints (the lost-quorum taint of a replica's node);
//     not their status, whose image list and conditions make up most of a
//     Node and change with every kubelet heartbeat;
//   - Jobs: only those of boot plans (label siterecovery.trilio.io/boot).
//
// Each controller changes these objects with merge patches computed from the
// cached copy, which name only the fields it changes, so the fields dropped
// here are never written back.
func CacheByObject() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:                        {Transform: slimPod},
		&kubevirtv1.VirtualMachineInstance{}: {Transform: slimVMI},
		&kubevirtv1.VirtualMachine{}:         {Transform: slimVM},
		&corev1.Node{}:                       {Transform: slimNode},
		&batchv1.Job{}:                       {Label: bootJobs},
	}
}

// bootJobs selects the Jobs of boot plans.
var bootJobs = func() labels.Selector {
	req, err := labels.NewRequirement(bootplan.LabelBoot, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}()

// slimMeta keeps what a reader, an index or a merge patch of the object needs;
// annotations only when keep is set.
func slimMeta(m metav1.ObjectMeta, keepAnnotations bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
		Labels: m.Labels, OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers,
	}
	if keepAnnotations {
		out.Annotations = m.Annotations
	}
	return out
}

func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a tombstone of a deletion the watch missed
	}
	out := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: slimMeta(p.ObjectMeta, false)}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out.Spec.Volumes = append(out.Spec.Volumes,
				corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}})
		}
	}
	out.Status.Phase = p.Status.Phase
	return out, nil
}

func slimVMI(obj any) (any, error) {
	v, ok := obj.(*kubevirtv1.VirtualMachineInstance)
	if !ok {
		return obj, nil
	}
	out := &kubevirtv1.VirtualMachineInstance{TypeMeta: v.TypeMeta, ObjectMeta: slimMeta(v.ObjectMeta, false)}
	for _, vol := range v.Spec.Volumes {
		if vol.PersistentVolumeClaim != nil || vol.DataVolume != nil {
			out.Spec.Volumes = append(out.Spec.Volumes, kubevirtv1.Volume{Name: vol.Name, VolumeSource: kubevirtv1.VolumeSource{
				PersistentVolumeClaim: vol.PersistentVolumeClaim, DataVolume: vol.DataVolume}})
		}
	}
	out.Status.Phase = v.Status.Phase
	for _, c := range v.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceReady || c.Type == kubevirtv1.VirtualMachineInstanceAgentConnected {
			out.Status.Conditions = append(out.Status.Conditions, kubevirtv1.VirtualMachineInstanceCondition{Type: c.Type, Status: c.Status})
		}
	}
	if len(v.Status.Interfaces) > 0 {
		out.Status.Interfaces = []kubevirtv1.VirtualMachineInstanceNetworkInterface{{IP: v.Status.Interfaces[0].IP}}
	}
	return out, nil
}

func slimVM(obj any) (any, error) {
	v, ok := obj.(*kubevirtv1.VirtualMachine)
	if !ok {
		return obj, nil
	}
	return &kubevirtv1.VirtualMachine{
		TypeMeta:   v.TypeMeta,
		ObjectMeta: slimMeta(v.ObjectMeta, true),
		Spec:       kubevirtv1.VirtualMachineSpec{Running: v.Spec.Running, RunStrategy: v.Spec.RunStrategy},
		Status:     v.Status,
	}, nil
}

func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: slimMeta(n.ObjectMeta, false), Spec: corev1.NodeSpec{Taints: n.Spec.Taints}}, nil
}
