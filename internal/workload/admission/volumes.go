package admission

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// volumes refuses a VM that starts to use a PVC of the replication stack: a
// new VM naming one, or an existing VM updated to name one it did not name
// before (the protected VM keeps the frontend PVCs protection gave it).
func (h *virtualMachines) volumes(ctx context.Context, req admission.Request, c caller, vm, old *kubevirtv1.VirtualMachine) admission.Response {
	added := claimsOf(vm)
	if old != nil {
		added = added.Difference(claimsOf(old))
	}
	for _, claim := range sets.List(added) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := h.pvcs.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: claim}, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				continue // nothing of siterecovery's by that name (yet); a PVC it makes later is new, and labelled
			}
			return admission.Errored(http.StatusInternalServerError, err)
		}
		why := guardedRole(pvc.Labels[srv1alpha1.ObjectRoleLabel])
		if why == "" {
			continue
		}
		owner := pvc.Labels[srv1alpha1.DRNamespaceLabel]
		if c.owns(owner) && c.protects(vm.Namespace) {
			continue
		}
		if c.owns(owner) {
			return admission.Denied(c.outsideApplications(fmt.Sprintf("VirtualMachine %s/%s may not use PersistentVolumeClaim %s/%s", vm.Namespace, vm.Name, vm.Namespace, claim), vm.Namespace))
		}
		return admission.Denied(fmt.Sprintf(
			"VirtualMachine %s/%s may not use PersistentVolumeClaim %s/%s: it %s (siterecovery's replication of DR namespace %s); a second VM on it would break that replication. User %q may not: %s",
			vm.Namespace, vm.Name, vm.Namespace, claim, why, owner, req.UserInfo.Username, h.allowed.who()))
	}
	return admission.Allowed("")
}

// guardedRole says what a PVC of role is, or "" when no VM but its own may
// not use it.
func guardedRole(role string) string {
	switch role {
	case srv1alpha1.ObjectRoleFrontend:
		return "is the DRBD device of a protected VM's disk, which only that VM uses"
	case srv1alpha1.ObjectRoleBacking:
		return "is the DR copy of a protected VM's disk, written only by DRBD; a failover starts from it"
	case srv1alpha1.ObjectRoleMetadata:
		return "holds DRBD's metadata of a protected VM's disk"
	}
	return ""
}

// claimsOf are the PVC names vm's volumes use: PersistentVolumeClaim volumes
// and DataVolumes (whose PVC has the DataVolume's name), hot-plugged or not.
func claimsOf(vm *kubevirtv1.VirtualMachine) sets.Set[string] {
	out := sets.New[string]()
	if vm.Spec.Template == nil {
		return out
	}
	for _, v := range vm.Spec.Template.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out.Insert(v.PersistentVolumeClaim.ClaimName)
		case v.DataVolume != nil:
			out.Insert(v.DataVolume.Name)
		}
	}
	for _, t := range vm.Spec.DataVolumeTemplates {
		out.Insert(t.Name)
	}
	return out
}
