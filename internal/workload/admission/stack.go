package admission

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// stackObjects refuses changing the spec of, or deleting, an object of the
// replication stack: DRBDResources, frontend and backing PVCs and PVs, the
// local ProtectionGroup copy, and the cluster's DRBDAllocation (whose claims
// keep two VMs of any DR namespace off one DRBD port or minor). Labels,
// annotations and status stay writable, so that tools and Kubernetes' own
// controllers keep working.
type stackObjects struct {
	allowed Identities
}

// Handle decides on an update or delete. Every kind is refused the same way;
// only the reason, what the change breaks and what to do instead, differs.
func (h *stackObjects) Handle(_ context.Context, req admission.Request) admission.Response {
	if h.allowed.allowed(req.UserInfo) {
		return admission.Allowed("")
	}
	r := reasonFor(req.Kind.Kind)
	why := ""
	switch req.Operation {
	case admissionv1.Delete:
		why = r.delete
	case admissionv1.Update:
		changed, err := specChanged(req)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if !changed {
			return admission.Allowed("")
		}
		why = r.update
	default:
		return admission.Allowed("")
	}
	return admission.Denied(fmt.Sprintf("%s %s %s. User %q may not: %s",
		req.Kind.Kind, name(req), why, req.UserInfo.Username, h.allowed.who()))
}

// reason is why a kind of the stack is guarded, for each refused operation.
type reason struct{ delete, update string }

func reasonFor(kind string) reason {
	if kind == "DRBDAllocation" {
		return reason{
			delete: "holds the DRBD replication ports and minors that every DR namespace's quorum-manager claimed on this cluster; deleting it lets the next protect give a port or minor in use to a second VM. " +
				"A claim is released by removing protection (deleting the ProtectionRequest on the quorum cluster), or by pg-controller once the claim's DR namespace is deleted from this cluster",
			update: "holds the DRBD replication ports and minors that every DR namespace's quorum-manager claimed on this cluster; its claims change only when quorum-manager protects or unprotects a VM, " +
				"and a claim changed by hand can give one port or minor to two VMs",
		}
	}
	return reason{
		delete: "is part of siterecovery's replication; deleting it by hand breaks replication of its VM. Unprotect the VM with its ProtectionRequest on the quorum cluster instead",
		update: "is managed by siterecovery; its spec changes only through the quorum cluster's requests (ProtectionRequest, FailoverRequest)",
	}
}

func name(req admission.Request) string {
	if req.Namespace != "" {
		return req.Namespace + "/" + req.Name
	}
	return req.Name
}

func specChanged(req admission.Request) (bool, error) {
	var old, cur unstructured.Unstructured
	if err := old.UnmarshalJSON(req.OldObject.Raw); err != nil {
		return false, err
	}
	if err := cur.UnmarshalJSON(req.Object.Raw); err != nil {
		return false, err
	}
	return !equality.Semantic.DeepEqual(old.Object["spec"], cur.Object["spec"]), nil
}
