package admission

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// DisasterSubresource is the virtual subresource of failoverrequests that RBAC
// grants to disaster operators: creating an unplanned or forced failover needs
// `create` on failoverrequests/disaster besides `create` on failoverrequests.
// Kubernetes RBAC cannot look into a request's fields, so the webhook asks the
// API server's authorizer about this subresource for the requesting user.
const DisasterSubresource = "disaster"

// Creating SubjectAccessReviews is a cluster-scoped right, which the
// quorum-control-plane chart grants in a ClusterRole of its own (webhook.yaml)
// rather than through the namespaced Role generated from markers.

// accessReviewer asks the API server whether the requesting user may do
// something.
type accessReviewer struct{ client client.Client }

// mayDoDisaster reports whether the user of the admission request in ctx may
// create unplanned or forced failovers in namespace.
func (a *accessReviewer) mayDoDisaster(ctx context.Context, namespace string) (bool, string, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return false, "", err
	}
	u := req.UserInfo
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: "create", Group: "siterecovery.trilio.io",
			Resource: "failoverrequests", Subresource: DisasterSubresource,
		},
	}}
	if err := a.client.Create(ctx, sar); err != nil {
		return false, "", fmt.Errorf("asking the API server whether %s may make an unplanned failover: %w", u.Username, err)
	}
	return sar.Status.Allowed, u.Username, nil
}
