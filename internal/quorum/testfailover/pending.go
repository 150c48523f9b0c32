package testfailover

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// pending validates the request and claims the isolated namespace's name. Nothing
// exists on the DR cluster before the finalizer is on the request.
func (r *Reconciler) pending(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.load(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.checkNamespacesAllowed(s); err != nil {
		return ctrl.Result{}, err
	}
	rc, err := r.dr(ctx, s)
	if err != nil {
		if !s.now.Before(s.deadline()) {
			return ctrl.Result{}, invalid(ReasonTimeout, "timed out after timeoutSeconds=%d waiting for %s: %v", s.tf.Spec.TimeoutSeconds, s.tf.Spec.TargetCluster, err)
		}
		return ctrl.Result{}, err
	}
	ns := isolatedNamespace(s.tf)
	existing := &corev1.Namespace{}
	switch err := rc.Direct.Get(ctx, client.ObjectKey{Name: ns}, existing); {
	case err == nil && existing.Labels[LabelUID] != string(s.tf.UID):
		return ctrl.Result{}, invalid(ReasonNamespaceExists, "isolated namespace %s already exists on %s and was not created by this test; set spec.isolatedNamespace to an unused name", ns, s.tf.Spec.TargetCluster)
	case err != nil && !apierrors.IsNotFound(err):
		return ctrl.Result{}, unreachable(s.tf.Spec.TargetCluster, err)
	}
	if err := checkGroupHookSidecars(ctx, s, rc); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.addFinalizer(ctx, s.tf); err != nil {
		return ctrl.Result{}, err
	}
	// The status is written against before, with its resourceVersion.
	s.before.Finalizers, s.before.ResourceVersion = s.tf.Finalizers, s.tf.ResourceVersion
	s.tf.Status.IsolatedNamespace = ns
	s.trail.Enter(srv1alpha1.TestFailoverSnapshotting, "snapshotting the DR copies of group %s on %s", s.group.Name, s.tf.Spec.TargetCluster)
	return ctrl.Result{}, nil
}

// load reads the quorum copy of the group and checks the target against it.
func (r *Reconciler) load(ctx context.Context, s *scope) error {
	tf := s.tf
	ref := tf.Spec.ProtectionGroupRef
	if ref.Namespace != "" && ref.Namespace != tf.Namespace {
		return invalid(srv1alpha1.ReasonInvalidSpec, "protectionGroupRef.namespace %q must be the TestFailover's namespace %q", ref.Namespace, tf.Namespace)
	}
	if tf.Spec.TimeoutSeconds <= 0 {
		return invalid(srv1alpha1.ReasonInvalidSpec, "timeoutSeconds must be positive")
	}
	s.group = &srv1alpha1.ProtectionGroup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: tf.Namespace, Name: ref.Name}, s.group); err != nil {
		if apierrors.IsNotFound(err) {
			return invalid(srv1alpha1.ReasonGroupNotFound, "ProtectionGroup %s/%s not found", tf.Namespace, ref.Name)
		}
		return err
	}
	if s.group.Spec.ZoneRef == nil {
		return invalid(srv1alpha1.ReasonInvalidSpec, "ProtectionGroup %s has no zoneRef", ref.Name)
	}
	zone := &srv1alpha1.ProtectionZone{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: tf.Namespace, Name: s.group.Spec.ZoneRef.Name}, zone); err != nil {
		if apierrors.IsNotFound(err) {
			return invalid(srv1alpha1.ReasonInvalidSpec, "ProtectionZone %s of group %s not found", s.group.Spec.ZoneRef.Name, ref.Name)
		}
		return err
	}
	s.zone = zone.Name
	var names []string
	found := false
	for _, c := range zone.Spec.Clusters {
		names = append(names, c.Name)
		found = found || c.Name == tf.Spec.TargetCluster
	}
	if !found {
		return invalid(srv1alpha1.ReasonInvalidTarget, "targetCluster %q is not a cluster of zone %s (clusters: %s)", tf.Spec.TargetCluster, zone.Name, strings.Join(names, ", "))
	}
	if tf.Spec.TargetCluster == s.group.Spec.ActiveCluster {
		return invalid(srv1alpha1.ReasonInvalidTarget, "targetCluster %q is the active cluster of group %s; a test failover boots the DR copies, so target a cluster the group does not run on", tf.Spec.TargetCluster, s.group.Name)
	}
	if len(s.group.Spec.VirtualMachines) == 0 {
		return invalid(ReasonNoDisks, "ProtectionGroup %s has no virtual machines to test", s.group.Name)
	}
	return nil
}

// reload re-reads the group for the phases after Pending. A group deleted
// meanwhile ends the test through the cleanup.
func (r *Reconciler) reload(ctx context.Context, s *scope) error {
	if s.group != nil {
		return nil
	}
	return r.load(ctx, s)
}

// dr is the target cluster's connection. The zone is found from the target when
// the group was not loaded in this reconcile (or is gone).
func (r *Reconciler) dr(ctx context.Context, s *scope) (*remote.Remote, error) {
	if s.zone == "" {
		zone, err := r.zoneOfTarget(ctx, s)
		if err != nil {
			return nil, err
		}
		s.zone = zone
	}
	rc, err := r.Remote.Get(s.key())
	if err != nil {
		return nil, unreachable(s.tf.Spec.TargetCluster, err)
	}
	return rc, nil
}

// remoteErr classifies an error of a call to the DR cluster.
func remoteErr(cluster, what string, err error) error {
	if err == nil {
		return nil
	}
	if e := flow.As(err); e != nil && e.Kind == flow.KindWaiting {
		return err // already an unreachable cluster
	}
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		return fmt.Errorf("%s on %s: %w", what, cluster, err)
	}
	return unreachable(cluster, fmt.Errorf("%s: %w", what, err))
}
