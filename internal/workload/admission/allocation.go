package admission

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// claims lets a DR namespace's quorum-manager change the DRBDAllocation's
// claims of its own DR namespace, and only those: the allocation is one per
// cluster and shared by every DR namespace replicating to it, so dropping or
// moving another namespace's claim would hand its port or minors to a second
// VM. Deleting the allocation drops every claim, so it may only while no other
// namespace holds one.
func (h *stackObjects) claims(req admission.Request, c caller, old, cur *unstructured.Unstructured) admission.Response {
	before, err := othersClaims(old, c.drNamespace)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var after []srv1alpha1.DRBDClaim
	if cur != nil {
		if after, err = othersClaims(cur, c.drNamespace); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	if equality.Semantic.DeepEqual(before, after) {
		return admission.Allowed("")
	}
	changed := "changes"
	if cur == nil {
		changed = "deletes"
	}
	return admission.Denied(fmt.Sprintf(
		"DRBDAllocation %s: this %s claims of other DR namespaces (%s); the quorum-manager of DR namespace %s (user %q) may change only its own DR namespace's claims",
		name(req), changed, claimNamespaces(before, after), c.drNamespace, c.name))
}

// othersClaims are the claims of obj that belong to a DR namespace other than
// own.
func othersClaims(obj *unstructured.Unstructured, own string) ([]srv1alpha1.DRBDClaim, error) {
	a := &srv1alpha1.DRBDAllocation{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, a); err != nil {
		return nil, err
	}
	var out []srv1alpha1.DRBDClaim
	for _, cl := range a.Spec.Claims {
		if cl.DRNamespace != own {
			out = append(out, cl)
		}
	}
	return out, nil
}

// claimNamespaces names the DR namespaces whose claims differ, for the refusal.
func claimNamespaces(before, after []srv1alpha1.DRBDClaim) string {
	key := func(cl srv1alpha1.DRBDClaim) string { return cl.DRNamespace + "/" + cl.RequestUID }
	kept := map[string]srv1alpha1.DRBDClaim{}
	for _, cl := range after {
		kept[key(cl)] = cl
	}
	names := map[string]bool{}
	for _, cl := range before {
		if n, ok := kept[key(cl)]; !ok || !equality.Semantic.DeepEqual(n, cl) {
			names[cl.DRNamespace] = true
		}
		delete(kept, key(cl))
	}
	for _, cl := range kept {
		names[cl.DRNamespace] = true
	}
	return strings.Join(slices.Sorted(maps.Keys(names)), ", ")
}
