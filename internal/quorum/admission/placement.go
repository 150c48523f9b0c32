package admission

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
)

// placements validates DRPlacementControls against their DRPolicy; the policy's
// own shape (two clusters, the interval format) is checked by its schema.
type placements struct{ client client.Reader }

var _ admission.Validator[*drv1alpha1.DRPlacementControl] = &placements{}

// ValidateCreate refuses clusters outside the policy.
func (v *placements) ValidateCreate(ctx context.Context, d *drv1alpha1.DRPlacementControl) (admission.Warnings, error) {
	return nil, v.clustersInPolicy(ctx, d)
}

// ValidateUpdate refuses clusters outside the policy, and an action that asks
// for the cluster the workload already runs on.
func (v *placements) ValidateUpdate(ctx context.Context, old, d *drv1alpha1.DRPlacementControl) (admission.Warnings, error) {
	if err := v.clustersInPolicy(ctx, d); err != nil {
		return nil, err
	}
	if d.Spec.Action == old.Spec.Action && d.Spec.FailoverCluster == old.Spec.FailoverCluster && d.Spec.PreferredCluster == old.Spec.PreferredCluster {
		return nil, nil
	}
	// The schema requires the cluster each action needs; this checks it against
	// where the workload runs now.
	current := d.Status.PreferredDecision.ClusterName
	if d.Spec.Action == drv1alpha1.ActionFailover && current != "" && d.Spec.FailoverCluster == current && old.Spec.Action != drv1alpha1.ActionFailover {
		return nil, fmt.Errorf("the workload already runs on %s; set spec.failoverCluster to the peer cluster", current)
	}
	return nil, nil
}

// ValidateDelete accepts every deletion.
func (v *placements) ValidateDelete(context.Context, *drv1alpha1.DRPlacementControl) (admission.Warnings, error) {
	return nil, nil
}

func (v *placements) clustersInPolicy(ctx context.Context, d *drv1alpha1.DRPlacementControl) error {
	p := &drv1alpha1.DRPolicy{}
	if err := v.client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.DRPolicyRef.Name}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("DRPolicy %q does not exist in namespace %s; create it first or fix spec.drPolicyRef", d.Spec.DRPolicyRef.Name, d.Namespace)
		}
		return err
	}
	for _, f := range []struct{ field, cluster string }{{"preferredCluster", d.Spec.PreferredCluster}, {"failoverCluster", d.Spec.FailoverCluster}} {
		if f.cluster != "" && !contains(p.Spec.DRClusters, f.cluster) {
			return fmt.Errorf("spec.%s %q is not a cluster of DRPolicy %s; use one of: %s", f.field, f.cluster, p.Name, strings.Join(p.Spec.DRClusters, ", "))
		}
	}
	return nil
}
