package pgsync

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// reconcileDelete removes a deleted quorum group from every cluster of its zone:
// the standby VMs pg-sync created on clusters other than the active one (never a
// VM that runs, never the active cluster's VMs: production stays as it is) and
// the workload copy. A cluster that cannot be reached holds the finalizer, with
// Synced=False saying which, until it answers again.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.group, Finalizer) {
		return ctrl.Result{}, nil
	}
	if s.group.Spec.ZoneRef == nil || s.group.Spec.ZoneRef.Name == "" {
		return ctrl.Result{}, r.release(ctx, s, corev1.EventTypeNormal, "the group names no zone; nothing to remove")
	}
	zone := &srv1alpha1.ProtectionZone{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.group.Namespace, Name: s.group.Spec.ZoneRef.Name}, zone); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// Without its zone no cluster can be reached again; holding the group
		// would only block the deletion of its namespace.
		return ctrl.Result{}, r.release(ctx, s, corev1.EventTypeWarning, fmt.Sprintf(
			"ProtectionZone %s no longer exists: workload copies and standby VMs of the group were left on its clusters", s.group.Spec.ZoneRef.Name))
	}
	s.zone = zone
	var res ctrl.Result
	var errs, pending []error
	var kept []string
	for _, zc := range zone.Spec.Clusters {
		c := r.removeFromCluster(ctx, s, zc.Name)
		kept = append(kept, c.drift...)
		if c.err == nil {
			continue
		}
		pending = append(pending, fmt.Errorf("%s: %w", c.name, c.err))
		if c.reason == "" {
			c.reason = srv1alpha1.ReasonWriteFailed
		}
		s.clusters = append(s.clusters, c)
		r2, err := flow.Result(ctrl.Result{}, c.err)
		res = flow.Soonest(res, r2)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(pending) == 0 {
		msg := fmt.Sprintf("removed the group's workload copies and standby VMs from %d clusters", len(zone.Spec.Clusters))
		if len(kept) > 0 {
			msg += "; " + strings.Join(kept, "; ")
		}
		return ctrl.Result{}, r.release(ctx, s, corev1.EventTypeNormal, msg)
	}
	setSynced(s, metav1.ConditionFalse, s.clusters[0].reason, "removing the deleted group from its clusters: "+errors.Join(pending...).Error())
	if perr := r.writeStatus(ctx, s); perr != nil {
		errs = append(errs, perr)
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	return res, nil
}

// removeFromCluster deletes the group's standby VMs (not on the active cluster)
// and then its workload copy on one cluster.
func (r *Reconciler) removeFromCluster(ctx context.Context, s *scope, cluster string) clusterResult {
	c := clusterResult{name: cluster}
	rem, err := r.connect(s, cluster)
	if err != nil {
		c.err, c.reason = err, flow.ReasonOf(err, remote.ReasonNotConnected)
		return c
	}
	if cluster != s.group.Spec.ActiveCluster {
		// Read past the cache: a standby created moments ago must not be missed.
		if err := r.deleteStandbys(ctx, s, rem, rem.Direct, &c, nil); err != nil {
			c.err, c.reason = err, flow.ReasonOf(err, srv1alpha1.ReasonWriteFailed)
			return c
		}
		if hasCompanions(s.group) {
			// No companion is kept: every copy pg-sync created goes.
			s.companions = map[string]companion{}
			if err := r.deleteCompanions(ctx, s, rem, &c, companionLabels(s.group)); err != nil {
				c.err, c.reason = err, flow.ReasonOf(err, srv1alpha1.ReasonWriteFailed)
				return c
			}
		}
	}
	if err := deleteCopy(ctx, s, rem); err != nil {
		c.err, c.reason = flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("cluster %s: deleting ProtectionGroup copy: %w", cluster, err)), srv1alpha1.ReasonWriteFailed
	}
	return c
}

// deleteCopy deletes the cluster's copy of the group when it is pg-sync's.
func deleteCopy(ctx context.Context, s *scope, rem *remote.Remote) error {
	cp := &srv1alpha1.ProtectionGroup{}
	if err := rem.Direct.Get(ctx, client.ObjectKeyFromObject(s.group), cp); err != nil {
		return client.IgnoreNotFound(err)
	}
	if cp.Labels[srv1alpha1.ProtectionGroupLabel] != s.group.Name || cp.Labels[srv1alpha1.ZoneLabel] != s.zone.Name {
		return nil // not a copy pg-sync wrote for this group
	}
	uid := cp.UID
	return client.IgnoreNotFound(rem.Direct.Delete(ctx, cp, client.Preconditions{UID: &uid}))
}

// ensureFinalizer adds Finalizer, with the resourceVersion read so that a stale
// read never drops another finalizer.
func (r *Reconciler) ensureFinalizer(ctx context.Context, s *scope) error {
	if controllerutil.ContainsFinalizer(s.group, Finalizer) {
		return nil
	}
	patched := s.group.DeepCopy()
	controllerutil.AddFinalizer(patched, Finalizer)
	if err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(s.group, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); err != nil {
		return err
	}
	s.group = patched
	s.before = patched.DeepCopy()
	return nil
}

// release records why the group may go and drops Finalizer.
func (r *Reconciler) release(ctx context.Context, s *scope, kind, message string) error {
	patched := s.group.DeepCopy()
	controllerutil.RemoveFinalizer(patched, Finalizer)
	err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(s.group, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner))
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("removing finalizer: %w", err)
	}
	r.Recorder.Event(s.group, kind, "Deleted", message)
	return nil
}
