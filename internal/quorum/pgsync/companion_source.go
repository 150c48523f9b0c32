package pgsync

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// companion is one object of the group's companions as read on the active
// cluster.
type companion struct {
	kind srv1alpha1.CompanionKind
	src  *unstructured.Unstructured
}

func (c companion) key() string { return companionKey(c.kind, c.src.GetNamespace(), c.src.GetName()) }

func companionKey(kind srv1alpha1.CompanionKind, namespace, name string) string {
	return string(kind) + " " + namespace + "/" + name
}

// hasCompanions reports whether pg-sync has companion work for the group:
// it names some, or it had copies it may have to delete.
func hasCompanions(g *srv1alpha1.ProtectionGroup) bool {
	return (g.Spec.Companions != nil && len(g.Spec.Companions.Objects) > 0) || len(g.Status.Companions) > 0
}

// loadCompanions reads the group's companions on the active cluster, directly
// (the remote caches hold only what carries the DR namespace's label). A
// Secret is read only when the group sets copySecrets. A read that fails
// leaves every copy elsewhere as it is: an unread source must not look
// deleted.
func (r *Reconciler) loadCompanions(ctx context.Context, s *scope) (ctrl.Result, error) {
	g := s.group
	if !hasCompanions(g) {
		return ctrl.Result{}, nil
	}
	rem, err := r.connect(s, g.Spec.ActiveCluster)
	if err != nil {
		s.companionsErr = err
		return ctrl.Result{}, nil //nolint:nilerr // reported per cluster; copies are left alone
	}
	s.companions = map[string]companion{}
	if g.Spec.Companions == nil {
		return ctrl.Result{}, nil
	}
	namespaces := map[string]bool{}
	for _, vm := range g.Spec.VirtualMachines {
		namespaces[vm.Namespace] = true
	}
	for _, sel := range g.Spec.Companions.Objects {
		problem := func(state srv1alpha1.CompanionState, format string, args ...any) {
			s.companionProblems = append(s.companionProblems, srv1alpha1.CompanionStatus{
				Kind: sel.Kind, Namespace: sel.Namespace, Name: sel.Name, State: state, Message: fmt.Sprintf(format, args...)})
		}
		switch {
		case sel.Kind == srv1alpha1.CompanionSecret && !g.Spec.Companions.CopySecrets:
			problem(srv1alpha1.CompanionRefused, "Secrets are copied only when spec.companions.copySecrets is true")
			continue
		case !namespaces[sel.Namespace]:
			problem(srv1alpha1.CompanionRefused, "namespace %s holds no VM of the group", sel.Namespace)
			continue
		}
		gvk := sel.Kind.GroupVersionKind()
		if gvk.Empty() {
			problem(srv1alpha1.CompanionRefused, "kind %s cannot be a companion", sel.Kind)
			continue
		}
		var found []unstructured.Unstructured
		if sel.Name != "" {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			err = rem.Direct.Get(ctx, client.ObjectKey{Namespace: sel.Namespace, Name: sel.Name}, u)
			if err == nil {
				found = append(found, *u)
			}
		} else {
			selector, serr := metav1.LabelSelectorAsSelector(sel.Selector)
			if serr != nil {
				problem(srv1alpha1.CompanionRefused, "invalid selector: %v", serr)
				continue
			}
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			err = rem.Direct.List(ctx, list, client.InNamespace(sel.Namespace), client.MatchingLabelsSelector{Selector: selector})
			found = list.Items
		}
		switch {
		case apierrors.IsNotFound(err) && sel.Name != "":
			problem(srv1alpha1.CompanionMissingAtSource, "not found on active cluster %s", g.Spec.ActiveCluster)
			continue
		case meta.IsNoMatchError(err):
			problem(srv1alpha1.CompanionFailed, "active cluster %s does not serve %s", g.Spec.ActiveCluster, gvk.GroupKind())
			continue
		case sel.Kind == srv1alpha1.CompanionSecret && apierrors.IsForbidden(err):
			problem(srv1alpha1.CompanionFailed, "Forbidden: quorum-manager may not read Secrets on active cluster %s (the workload chart's quorumAccess.companionSecrets)", g.Spec.ActiveCluster)
			continue
		case err != nil:
			s.companionsErr = flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("cluster %s: reading companion %s %s: %s",
				g.Spec.ActiveCluster, sel.Kind, sel.Namespace, companionError(sel.Kind, err)))
			s.companions = nil
			return ctrl.Result{}, nil
		case len(found) == 0:
			problem(srv1alpha1.CompanionMissingAtSource, "the selector matches nothing on active cluster %s", g.Spec.ActiveCluster)
			continue
		}
		for i := range found {
			c := companion{kind: sel.Kind, src: &found[i]}
			s.companions[c.key()] = c
		}
	}
	return ctrl.Result{}, nil
}

// companionError is what a message may say of a failed call about an object
// of kind: the API server's message, except for a Secret, whose errors could
// quote what was sent; a Secret's error is told by its reason and code only.
func companionError(kind srv1alpha1.CompanionKind, err error) string {
	if kind != srv1alpha1.CompanionSecret {
		return err.Error()
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return fmt.Sprintf("%s (HTTP %d)", st.Status().Reason, st.Status().Code)
	}
	return "request failed"
}

// overridePatch returns the merge patch the group declares for an object on
// a cluster, if any.
func overridePatch(g *srv1alpha1.ProtectionGroup, kind srv1alpha1.CompanionKind, namespace, name, cluster string) []byte {
	if g.Spec.Companions == nil {
		return nil
	}
	i := slices.IndexFunc(g.Spec.Companions.Overrides, func(o srv1alpha1.CompanionOverride) bool {
		return o.Kind == kind && o.Namespace == namespace && o.Name == name && o.Cluster == cluster
	})
	if i < 0 {
		return nil
	}
	return g.Spec.Companions.Overrides[i].MergePatch.Raw
}
