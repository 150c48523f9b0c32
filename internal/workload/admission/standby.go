package admission

import (
	"context"
	"fmt"
	"net/http"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// standbyVMs refuses starting a protected VM on the cluster where its group is
// held stopped: only the failover flow, through the local ProtectionGroup, may
// start it there.
type standbyVMs struct {
	client  client.Reader
	allowed Identities
	decoder admission.Decoder
}

// Handle decides on a VirtualMachine create or update.
func (h *standbyVMs) Handle(ctx context.Context, req admission.Request) admission.Response {
	if h.allowed.allowed(req.UserInfo) {
		return admission.Allowed("")
	}
	vm := &kubevirtv1.VirtualMachine{}
	if err := h.decoder.Decode(req, vm); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if !runs(vm) {
		return admission.Allowed("")
	}
	if len(req.OldObject.Raw) > 0 {
		old := &kubevirtv1.VirtualMachine{}
		if err := h.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if runs(old) {
			return admission.Allowed("") // not a start
		}
	}
	group, err := h.stoppedGroupOf(ctx, vm)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if group == nil {
		return admission.Allowed("")
	}
	return admission.Denied(fmt.Sprintf(
		"VirtualMachine %s/%s is the standby copy of protection group %s, which is held stopped on this cluster because it runs on another one; starting it here would run the VM on two sites. Fail the group over with a FailoverRequest on the quorum cluster instead. User %q may not start it: %s",
		vm.Namespace, vm.Name, group.Name, req.UserInfo.Username, h.allowed.who()))
}

// stoppedGroupOf returns the local ProtectionGroup that holds vm stopped, if any.
func (h *standbyVMs) stoppedGroupOf(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*srv1alpha1.ProtectionGroup, error) {
	list := &srv1alpha1.ProtectionGroupList{}
	if err := h.client.List(ctx, list); err != nil {
		return nil, err
	}
	for i := range list.Items {
		g := &list.Items[i]
		if g.Spec.DesiredState != srv1alpha1.StateStopped {
			continue
		}
		for _, ref := range g.Spec.VirtualMachines {
			if ref.Namespace == vm.Namespace && ref.Name == vm.Name {
				return g, nil
			}
		}
	}
	return nil, nil
}

// runs reports whether vm's spec asks KubeVirt to run it.
func runs(vm *kubevirtv1.VirtualMachine) bool {
	if vm.Spec.Running != nil {
		return *vm.Spec.Running
	}
	if vm.Spec.RunStrategy == nil {
		return false
	}
	return *vm.Spec.RunStrategy != kubevirtv1.RunStrategyHalted
}
