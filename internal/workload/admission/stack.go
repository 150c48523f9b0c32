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
// replication stack: DRBDResources, frontend and backing PVCs and PVs, and the
// local ProtectionGroup copy. Labels, annotations and status stay writable, so
// that tools and Kubernetes' own controllers keep working.
type stackObjects struct {
	allowed Identities
}

// Handle decides on an update or delete.
func (h *stackObjects) Handle(_ context.Context, req admission.Request) admission.Response {
	if h.allowed.allowed(req.UserInfo) {
		return admission.Allowed("")
	}
	what := fmt.Sprintf("%s %s", req.Kind.Kind, name(req))
	switch req.Operation {
	case admissionv1.Delete:
		return admission.Denied(fmt.Sprintf("%s is part of siterecovery's replication; deleting it by hand breaks replication of its VM. Unprotect the VM with its ProtectionRequest on the quorum cluster instead. User %q may not: %s",
			what, req.UserInfo.Username, h.allowed.who()))
	case admissionv1.Update:
		changed, err := specChanged(req)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if !changed {
			return admission.Allowed("")
		}
		return admission.Denied(fmt.Sprintf("%s is managed by siterecovery; its spec changes only through the quorum cluster's requests (ProtectionRequest, FailoverRequest). User %q may not change it: %s",
			what, req.UserInfo.Username, h.allowed.who()))
	}
	return admission.Allowed("")
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
