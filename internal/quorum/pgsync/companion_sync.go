package pgsync

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// syncCompanions keeps the group's companion copies on a non-active cluster:
// it creates or updates the copy of each companion read on the active
// cluster, and deletes the copies pg-sync created whose source is gone or no
// longer named. An object of a companion's name that pg-sync did not create
// for this group is reported as a conflict and never changed. Everything is
// read directly: the caches hold only labelled objects, and a conflict is
// one that is not.
func (r *Reconciler) syncCompanions(ctx context.Context, s *scope, rem *remote.Remote, c *clusterResult) error {
	if !hasCompanions(s.group) {
		return nil
	}
	if s.companionsErr != nil {
		c.drift = append(c.drift, fmt.Sprintf("companion objects not verified: %s", flow.ReasonOf(s.companionsErr, srv1alpha1.ReasonReadFailed)))
		return nil //nolint:nilerr // the unread sources are reported as drift; the copies are left alone
	}
	labels := companionLabels(s.group)
	for _, key := range slices.Sorted(maps.Keys(s.companions)) {
		comp := s.companions[key]
		st := r.syncCompanion(ctx, s, rem, c, comp, labels)
		if st.State != srv1alpha1.CompanionInSync {
			c.drift = append(c.drift, fmt.Sprintf("companion %s: %s", key, st.Message))
		}
		c.companions = append(c.companions, st)
	}
	return r.deleteCompanions(ctx, s, rem, c, labels)
}

// syncCompanion writes one companion's copy when it is missing or differs
// from what pg-sync would write now (the hash annotation), by server-side
// apply so that fields the DR cluster's API server allocates are kept.
func (r *Reconciler) syncCompanion(ctx context.Context, s *scope, rem *remote.Remote, c *clusterResult, comp companion, labels map[string]string) srv1alpha1.CompanionStatus {
	src := comp.src
	st := srv1alpha1.CompanionStatus{Kind: comp.kind, Namespace: src.GetNamespace(), Name: src.GetName(), Cluster: rem.Key.Cluster,
		State: srv1alpha1.CompanionInSync}
	fail := func(state srv1alpha1.CompanionState, format string, args ...any) srv1alpha1.CompanionStatus {
		st.State, st.Message = state, truncate(fmt.Sprintf(format, args...), 512)
		return st
	}
	want, err := buildCompanionCopy(src, comp.kind, labels, overridePatch(s.group, comp.kind, src.GetNamespace(), src.GetName(), rem.Key.Cluster))
	if err != nil {
		return fail(srv1alpha1.CompanionRefused, "override for cluster %s: %v", rem.Key.Cluster, err)
	}
	have := &unstructured.Unstructured{}
	have.SetGroupVersionKind(want.GroupVersionKind())
	err = rem.Direct.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case meta.IsNoMatchError(err):
		return fail(srv1alpha1.CompanionFailed, "cluster %s does not serve %s", rem.Key.Cluster, want.GroupVersionKind().GroupKind())
	case apierrors.IsNotFound(err):
	case err != nil:
		return fail(srv1alpha1.CompanionFailed, "reading on cluster %s: %s", rem.Key.Cluster, companionError(comp.kind, err))
	case !ownCompanion(have, labels):
		return fail(srv1alpha1.CompanionConflict, "an object of that name on cluster %s was not created by pg-sync for this group; left as it is", rem.Key.Cluster)
	case have.GetAnnotations()[companionHashAnnotation] == want.GetAnnotations()[companionHashAnnotation]:
		return st
	}
	if err := r.applyCompanion(ctx, rem, want, apierrors.IsNotFound(err)); err != nil {
		return fail(srv1alpha1.CompanionFailed, "writing on cluster %s: %s", rem.Key.Cluster, companionError(comp.kind, err))
	}
	c.wrote = true
	return st
}

// applyCompanion server-side applies a copy, creating its namespace first
// when the cluster lacks it.
func (r *Reconciler) applyCompanion(ctx context.Context, rem *remote.Remote, want *unstructured.Unstructured, missing bool) error {
	if missing {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: want.GetNamespace()}}
		if err := rem.Direct.Create(ctx, ns, client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return rem.Direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(want), client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// ownCompanion reports whether obj is a copy pg-sync made for this group.
func ownCompanion(obj client.Object, labels map[string]string) bool {
	l := obj.GetLabels()
	for _, k := range []string{CreatedByLabel, srv1alpha1.ProtectionGroupLabel, srv1alpha1.DRNamespaceLabel, srv1alpha1.ZoneLabel} {
		if l[k] != labels[k] {
			return false
		}
	}
	return true
}

// deleteCompanions deletes the copies pg-sync created for the group on a
// non-active cluster whose companion was not read at the source this pass
// (removed from the list, deleted there, or a Secret once copySecrets is
// unset). Each delete carries the UID and resourceVersion read.
func (r *Reconciler) deleteCompanions(ctx context.Context, s *scope, rem *remote.Remote, c *clusterResult, labels map[string]string) error {
	sel := client.MatchingLabels{CreatedByLabel: ControllerName, srv1alpha1.ProtectionGroupLabel: labels[srv1alpha1.ProtectionGroupLabel],
		srv1alpha1.DRNamespaceLabel: labels[srv1alpha1.DRNamespaceLabel], srv1alpha1.ZoneLabel: labels[srv1alpha1.ZoneLabel]}
	for _, kind := range srv1alpha1.CompanionKinds {
		gvk := kind.GroupVersionKind()
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		switch err := rem.Direct.List(ctx, list, sel); {
		case meta.IsNoMatchError(err), kind == srv1alpha1.CompanionSecret && apierrors.IsForbidden(err):
			// Not served, or Secrets without the workload chart's
			// quorumAccess.companionSecrets: no copy can have been made.
			continue
		case err != nil:
			return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("cluster %s: listing companion %s copies: %s", c.name, kind, companionError(kind, err)))
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if _, keep := s.companions[companionKey(kind, obj.GetNamespace(), obj.GetName())]; keep {
				continue
			}
			uid, rv := obj.GetUID(), obj.GetResourceVersion()
			err := rem.Direct.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("cluster %s: deleting companion copy %s %s/%s: %s",
					c.name, kind, obj.GetNamespace(), obj.GetName(), companionError(kind, err)))
			}
			c.wrote = true
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// companionStatuses is status.companions: the problems at the source, then
// each cluster's copies. A cluster that could not be synced this pass keeps
// what the last pass reported for it; none is kept once the group names no
// companion and has no copy left.
func companionStatuses(s *scope) []srv1alpha1.CompanionStatus {
	if !hasCompanions(s.group) {
		return nil
	}
	out := slices.Clone(s.companionProblems)
	for _, c := range s.clusters {
		if c.name == s.group.Spec.ActiveCluster {
			continue
		}
		if c.err != nil || s.companionsErr != nil {
			for _, st := range s.before.Status.Companions {
				if st.Cluster == c.name {
					out = append(out, st)
				}
			}
			continue
		}
		out = append(out, c.companions...)
	}
	if len(out) > maxCompanionStatuses {
		out = out[:maxCompanionStatuses]
	}
	return out
}

// maxCompanionStatuses is the schema's bound on status.companions.
const maxCompanionStatuses = 512
