package drpc

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// ensureDesiredState asks the group's workload copy on a cluster to run or to
// stop, and reports whether the copy has observed that and reached it. The copy
// is created by pg-sync; until it exists this waits rather than create a copy
// pg-sync has not labelled.
func (r *Reconciler) ensureDesiredState(ctx context.Context, s *scope, cluster string, state srv1alpha1.GroupState) (bool, error) {
	rc := s.remotes[cluster]
	if rc == nil {
		return false, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "cluster %s: %v", cluster, s.unreachable[cluster])
	}
	cp := s.copies[cluster]
	if cp == nil {
		return false, flow.Waiting(ReasonProgressing, waitRetry, "waiting for pg-sync to create ProtectionGroup %s on %s", s.group.Name, cluster)
	}
	if cp.Spec.DesiredState == state {
		return settled(cp, s.group, state), nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(srv1alpha1.GroupVersion.WithKind("ProtectionGroup"))
	u.SetNamespace(cp.Namespace)
	u.SetName(cp.Name)
	if err := unstructured.SetNestedField(u.Object, string(state), "spec", "desiredState"); err != nil {
		return false, err
	}
	if err := rc.Direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return false, flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("cluster %s: setting desiredState=%s on ProtectionGroup %s: %w", cluster, state, cp.Name, err))
	}
	cp.Spec.DesiredState = state
	return false, nil
}

// appState describes a workload copy for a waiting message.
func appState(cp *srv1alpha1.ProtectionGroup) string {
	if cp == nil {
		return "absent"
	}
	return fmt.Sprintf("desiredState %s, currentState %q", cp.Spec.DesiredState, cp.Status.CurrentState)
}

// flipActiveCluster records the cluster the application now runs on in the
// quorum copy, so that pg-sync builds the standby VMs on the other cluster.
func (r *Reconciler) flipActiveCluster(ctx context.Context, s *scope, cluster string) error {
	if s.group.Spec.ActiveCluster == cluster {
		return nil
	}
	before := s.group.DeepCopy()
	s.group.Spec.ActiveCluster = cluster
	if err := r.Client.Patch(ctx, s.group, client.MergeFrom(before)); err != nil {
		return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("setting activeCluster of ProtectionGroup %s to %s: %w", s.group.Name, cluster, err))
	}
	return nil
}

// settled reports whether a workload copy lists every VM of the quorum copy (a
// copy pg-sync has only just created has none, and an empty group counts as
// stopped at once), has observed its current spec and reached state.
func settled(cp, group *srv1alpha1.ProtectionGroup, state srv1alpha1.GroupState) bool {
	return len(cp.Spec.VirtualMachines) >= len(group.Spec.VirtualMachines) &&
		cp.Status.ObservedGeneration == cp.Generation && cp.Status.CurrentState == state
}
