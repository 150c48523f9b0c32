package virtapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// authorize asks the API server whether the caller the front proxy names
// may update vm's subresource, as virt-api's authorizer does
// (pkg/virt-api/rest/authorizer.go): a SubjectAccessReview of the user,
// groups and extras from the X-Remote-* headers, for verb update (a PUT of a
// named object) of virtualmachineinstances/<subresource> in
// subresources.kubevirt.io.
func (h *handler) authorize(ctx context.Context, r *http.Request, vm types.NamespacedName, subresource string) error {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range r.Header {
		if key, ok := strings.CutPrefix(http.CanonicalHeaderKey(k), "X-Remote-Extra-"); ok {
			extra[strings.ToLower(key)] = v
		}
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: r.Header.Get("X-Remote-User"), Groups: r.Header.Values("X-Remote-Group"), Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: vm.Namespace, Verb: "update", Group: Group, Version: Version,
			Resource: "virtualmachineinstances", Subresource: subresource, Name: vm.Name},
	}}
	if err := h.client.Create(ctx, sar); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("access review: %w", err))
	}
	if !sar.Status.Allowed {
		return apierrors.NewForbidden(schema.GroupResource{Group: Group, Resource: "virtualmachineinstances/" + subresource}, vm.Name,
			fmt.Errorf("user %s may not update it: %s", sar.Spec.User, sar.Status.Reason))
	}
	return nil
}
