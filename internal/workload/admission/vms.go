package admission

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// virtualMachines guards the VMs of protected groups by what they are, not by
// labels their editor controls: a VM is the standby copy of a group when the
// local ProtectionGroup held stopped on this cluster lists it, whatever its
// labels say, and a PVC is part of the replication stack by its role label,
// which stackObjects keeps from being changed. It refuses starting a standby
// (one VM running on two sites) or deleting it (a VM created in its place
// would be nobody's standby), and any VM starting to use a frontend, DR backing
// or metadata PVC that is not already its own (a second writer past DRBD, or
// into the copy a failover starts from).
type virtualMachines struct {
	groups  client.Reader // local ProtectionGroup copies (cached)
	pvcs    client.Reader // PVCs, read from the API server: a decision on a stale cache could miss a new one
	allowed Identities
	decoder admission.Decoder
}

// Handle decides on a VirtualMachine create, update or delete.
func (h *virtualMachines) Handle(ctx context.Context, req admission.Request) admission.Response {
	c := h.allowed.caller(req.UserInfo)
	if c.trusted {
		return admission.Allowed("")
	}
	var vm, old *kubevirtv1.VirtualMachine
	if len(req.OldObject.Raw) > 0 {
		old = &kubevirtv1.VirtualMachine{}
		if err := h.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	if req.Operation == admissionv1.Delete {
		return h.delete(ctx, req, c, old)
	}
	vm = &kubevirtv1.VirtualMachine{}
	if err := h.decoder.Decode(req, vm); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if resp := h.start(ctx, req, c, vm, old); !resp.Allowed {
		return resp
	}
	return h.volumes(ctx, req, c, vm, old)
}

// start refuses starting the standby copy of a group held stopped here.
func (h *virtualMachines) start(ctx context.Context, req admission.Request, c caller, vm, old *kubevirtv1.VirtualMachine) admission.Response {
	if !runs(vm) || (old != nil && runs(old)) {
		return admission.Allowed("") // not a start
	}
	group, err := h.stoppedGroupOf(ctx, vm.Namespace, vm.Name)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if group == nil || (c.owns(group.Namespace) && c.protects(vm.Namespace)) {
		return admission.Allowed("")
	}
	if c.owns(group.Namespace) {
		return admission.Denied(c.outsideApplications(fmt.Sprintf("starting VirtualMachine %s/%s, the standby copy of protection group %s", vm.Namespace, vm.Name, group.Name), vm.Namespace))
	}
	return admission.Denied(fmt.Sprintf(
		"VirtualMachine %s/%s is the standby copy of protection group %s, which is held stopped on this cluster because it runs on another one; starting it here would run the VM on two sites. Fail the group over with a FailoverRequest in DR namespace %s on the quorum cluster instead. User %q may not start it: %s",
		vm.Namespace, vm.Name, group.Name, group.Namespace, req.UserInfo.Username, h.allowed.who()))
}

// delete refuses deleting the standby copy of a group held stopped here.
func (h *virtualMachines) delete(ctx context.Context, req admission.Request, c caller, old *kubevirtv1.VirtualMachine) admission.Response {
	group, err := h.stoppedGroupOf(ctx, old.Namespace, old.Name)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if group == nil || (c.owns(group.Namespace) && c.protects(old.Namespace)) {
		return admission.Allowed("")
	}
	if c.owns(group.Namespace) {
		return admission.Denied(c.outsideApplications(fmt.Sprintf("deleting VirtualMachine %s/%s, the standby copy of protection group %s", old.Namespace, old.Name, group.Name), old.Namespace))
	}
	return admission.Denied(fmt.Sprintf(
		"VirtualMachine %s/%s is the standby copy of protection group %s, which is held stopped on this cluster; deleting it leaves the group without its copy of the VM here. Unprotect the VM with its ProtectionRequest in DR namespace %s on the quorum cluster instead. User %q may not delete it: %s",
		old.Namespace, old.Name, group.Name, group.Namespace, req.UserInfo.Username, h.allowed.who()))
}

// stoppedGroupOf returns the local ProtectionGroup that holds namespace/name
// stopped, if any.
func (h *virtualMachines) stoppedGroupOf(ctx context.Context, namespace, name string) (*srv1alpha1.ProtectionGroup, error) {
	list := &srv1alpha1.ProtectionGroupList{}
	if err := h.groups.List(ctx, list); err != nil {
		return nil, err
	}
	for i := range list.Items {
		g := &list.Items[i]
		if g.Spec.DesiredState != srv1alpha1.StateStopped {
			continue
		}
		for _, ref := range g.Spec.VirtualMachines {
			if ref.Namespace == namespace && ref.Name == name {
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
