package protection

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// placeReplica returns the node of a side's replica. The node is the
// scheduler's choice: the replica holder pod, which consumes the side's
// backing claims, is created without a node and the scheduler places it where
// its claims can attach (a WaitForFirstConsumer claim is provisioned on that
// node), where it fits, spread across nodes from the group's other replicas.
// A pod given a nodeName bypasses all of that. What exists is the record: the
// DRBDResource's node, else the holder pod's. ok is false, with a wait
// condition that says why, until the holder pod is placed. No timer: the
// holder pod's watch (SetupWithManager) wakes the request when the scheduler
// binds the pod or says why it cannot.
func (r *Reconciler) placeReplica(ctx context.Context, s *scope, sd side) (string, bool, error) {
	ns := s.vmNamespace()
	d := &srv1alpha1.DRBDResource{}
	switch err := sd.rc.Direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: s.req.Status.DRBDResourceName}, d); {
	case err == nil && ownedBy(d, s):
		return d.Spec.NodeName, true, nil
	case err != nil && !apierrors.IsNotFound(err):
		return "", false, remoteErr(sd.cluster, "reading DRBDResource "+s.req.Status.DRBDResourceName, err)
	}
	pod := &corev1.Pod{}
	err := sd.rc.Direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: HolderName(s.req.Spec.VirtualMachine.Name)}, pod)
	switch {
	case err == nil && ownedBy(pod, s) && pod.Spec.NodeName != "":
		return pod.Spec.NodeName, true, nil
	case err == nil && ownedBy(pod, s):
		r.waitForScheduler(s, sd, pod)
		return "", false, nil
	case err != nil && !apierrors.IsNotFound(err):
		return "", false, remoteErr(sd.cluster, "reading replica holder pod", err)
	}
	vmNode := ""
	if sd.primary {
		// The primary replica sits under the running VM, whose disks are
		// attached to its node.
		vmi := &kubevirtv1.VirtualMachineInstance{}
		switch err := sd.rc.Direct.Get(ctx, s.vmKey(), vmi); {
		case err == nil:
			vmNode = vmi.Status.NodeName
		case !apierrors.IsNotFound(err):
			return "", false, remoteErr(sd.cluster, "reading VirtualMachineInstance "+s.vmKey().String(), err)
		}
	}
	// createOwned refuses a holder pod of the same name it did not create.
	if err := createOwned(ctx, sd.rc, sd.cluster, s, r.holderPod(s, sd, vmNode)); err != nil {
		return "", false, err
	}
	s.trail.Wait(ReasonReplicaUnscheduled, "created replica holder pod %s/%s on cluster %s; waiting for the scheduler to place it",
		ns, HolderName(s.req.Spec.VirtualMachine.Name), sd.cluster)
	return "", false, nil
}

// waitForScheduler records that the replica waits for its holder pod to be
// placed, with the scheduler's own account of why it is not.
func (r *Reconciler) waitForScheduler(s *scope, sd side, pod *corev1.Pod) {
	why := "the scheduler has not placed it yet"
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
			why = fmt.Sprintf("the scheduler cannot place it: %s (%s)", c.Message, c.Reason)
		}
	}
	msg := fmt.Sprintf("replica holder pod %s/%s on cluster %s is not on a node: %s; the replica goes where the pod's claims can attach and it fits "+
		"(free capacity, remove taints it does not tolerate, or check the claims' storage class topology)", pod.Namespace, pod.Name, sd.cluster, why)
	s.trail.Wait(ReasonReplicaUnscheduled, "%s", msg)
	setCondition(s.req, ConditionReplicaProvisioned, metav1.ConditionFalse, ReasonReplicaUnscheduled, "%s", msg)
}

// holderPlacement is the scheduling part of a side's holder pod. On the
// primary with a running VM it requires the VM's node. Elsewhere it spreads
// the replicas of one protection group across nodes (and, as far as the
// nodes allow, zones), so that a group's VMs do not all fail over onto one
// node; the spread is a preference, so a cluster with fewer nodes still takes
// every replica.
func holderPlacement(s *scope, vmNode string) (*corev1.Affinity, []corev1.TopologySpreadConstraint) {
	if vmNode != "" {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
				Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{vmNode}}}}},
		}}}, nil
	}
	group := &metav1.LabelSelector{MatchLabels: map[string]string{
		srv1alpha1.ProtectionGroupLabel: s.req.Spec.ProtectionGroupRef.Name,
		srv1alpha1.DRNamespaceLabel:     s.req.Namespace,
		srv1alpha1.ObjectRoleLabel:      srv1alpha1.ObjectRoleHolder,
	}}
	return nil, []corev1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: group},
		{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: group},
	}
}
