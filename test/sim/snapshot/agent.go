package snapshot

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type agents struct {
	client client.Client
	opts   Options
}

// Reconcile connects the guest agent of one running VMI.
func (r *agents) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := r.client.Get(ctx, req.NamespacedName, vmi); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if vmi.DeletionTimestamp != nil || vmi.Status.Phase != kubevirtv1.Running {
		return ctrl.Result{}, nil
	}
	if sel := r.opts.GuestAgentSelector; sel != nil && !sel.Matches(labels.Set(vmi.Labels)) {
		return ctrl.Result{}, nil
	}
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceAgentConnected {
			return ctrl.Result{}, nil
		}
	}
	if left := vmi.CreationTimestamp.Add(r.opts.GuestAgentDelay).Sub(r.opts.Clock.Now()); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	before := vmi.DeepCopy()
	vmi.Status.Conditions = append(vmi.Status.Conditions, kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(r.opts.Clock.Now()),
	})
	// KubeVirt's VMI CRD has no status subresource: the status is part of the object.
	return ctrl.Result{}, client.IgnoreNotFound(r.client.Patch(ctx, vmi, client.MergeFrom(before)))
}
