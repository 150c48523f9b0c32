package drill

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// blocker says why a drill must not start now, or "" when it may: never two
// tests of a group at once, never a test during a failover (it would snapshot
// replicas that are changing roles), never on the cluster the group runs on.
func (r *Reconciler) blocker(ctx context.Context, g *srv1alpha1.ProtectionGroup) (string, error) {
	if t := g.Spec.Drill.Template.TargetCluster; t == g.Spec.ActiveCluster {
		return fmt.Sprintf("the group runs on %s, the drill's targetCluster; set spec.drill.template.targetCluster to a DR cluster", t), nil
	}
	tests := &srv1alpha1.TestFailoverList{}
	if err := r.Client.List(ctx, tests, client.InNamespace(g.Namespace)); err != nil {
		return "", fmt.Errorf("listing test failovers: %w", err)
	}
	for _, tf := range tests.Items {
		if tf.Spec.ProtectionGroupRef.Name == g.Name && !finished(&tf) {
			if tf.Labels[srv1alpha1.DrillLabel] == g.Name {
				return fmt.Sprintf("the previous drill %s is still running", tf.Name), nil
			}
			return fmt.Sprintf("test failover %s of the group is in progress", tf.Name), nil
		}
	}
	requests := &srv1alpha1.FailoverRequestList{}
	if err := r.Client.List(ctx, requests, client.InNamespace(g.Namespace)); err != nil {
		return "", fmt.Errorf("listing failover requests: %w", err)
	}
	for _, fr := range requests.Items {
		done := fr.Status.Phase == srv1alpha1.FailoverCompleted || fr.Status.Phase == srv1alpha1.FailoverFailed
		if fr.Spec.ProtectionGroupRef.Name == g.Name && !done {
			return fmt.Sprintf("failover request %s of the group is in progress", fr.Name), nil
		}
	}
	return "", nil
}
