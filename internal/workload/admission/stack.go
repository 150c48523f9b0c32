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
// replication stack: DRBDResources, frontend, backing and metadata PVCs and
// frontend PVs, the local ProtectionGroup copy, and the cluster's
// DRBDAllocation (whose claims keep two VMs of any DR namespace off one DRBD
// port or minor). Annotations, status and labels of one's own stay writable,
// so that tools and Kubernetes' own controllers keep working; the labels that
// say what an object is to siterecovery (productLabels) do not, since the
// webhook configuration selects the PVCs and PVs by them: an object relabelled
// by hand would leave the webhook's sight and could then be deleted.
type stackObjects struct {
	allowed Identities
}

// Handle decides on an update or delete. Every kind is refused the same way;
// only the reason, what the change breaks and what to do instead, differs.
func (h *stackObjects) Handle(_ context.Context, req admission.Request) admission.Response {
	c := h.allowed.caller(req.UserInfo)
	if c.trusted {
		return admission.Allowed("")
	}
	old, cur, err := objects(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if req.Kind.Kind == "DRBDAllocation" && c.drNamespace != "" {
		return h.claims(req, c, old, cur)
	}
	if c.drNamespace != "" {
		return h.ownObject(req, c, old, cur)
	}
	r := reasonFor(req.Kind.Kind)
	why := ""
	switch req.Operation {
	case admissionv1.Delete:
		why = r.delete
	case admissionv1.Update:
		if !equality.Semantic.DeepEqual(old.Object["spec"], cur.Object["spec"]) {
			why = r.update
		} else if l := changedProductLabel(old, cur); l != "" {
			why = fmt.Sprintf("carries label %s, which says what it is to siterecovery; only siterecovery changes it", l)
		} else {
			return admission.Allowed("")
		}
	default:
		return admission.Allowed("")
	}
	return admission.Denied(fmt.Sprintf("%s %s %s. User %q may not: %s",
		req.Kind.Kind, name(req), why, req.UserInfo.Username, h.allowed.who()))
}

// ownObject lets a DR namespace's quorum-manager change the objects of its
// own DR namespace, and only those: it may not move one into its namespace
// or out of another's by its labels either.
func (h *stackObjects) ownObject(req admission.Request, c caller, old, cur *unstructured.Unstructured) admission.Response {
	what := req.Kind.Kind + " " + name(req)
	owner := drNamespaceOf(req.Kind.Kind, old)
	if !c.owns(owner) {
		return admission.Denied(c.otherNamespace(what, owner))
	}
	if cur != nil {
		if to := drNamespaceOf(req.Kind.Kind, cur); to != "" && to != owner {
			return admission.Denied(c.otherNamespace(what+" (relabelled)", to))
		}
	}
	return admission.Allowed("")
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

// objects decodes the request's old object (updates and deletes) and new
// object (updates; nil for a delete).
func objects(req admission.Request) (old, cur *unstructured.Unstructured, err error) {
	old = &unstructured.Unstructured{}
	if err := old.UnmarshalJSON(req.OldObject.Raw); err != nil {
		return nil, nil, err
	}
	if req.Operation == admissionv1.Delete || len(req.Object.Raw) == 0 {
		return old, nil, nil
	}
	cur = &unstructured.Unstructured{}
	if err := cur.UnmarshalJSON(req.Object.Raw); err != nil {
		return nil, nil, err
	}
	return old, cur, nil
}
