package admission

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// testFailovers validates TestFailovers; their probe port range and HTTP path
// are checked by the schema.
type testFailovers struct{ client client.Reader }

var _ admission.Validator[*srv1alpha1.TestFailover] = &testFailovers{}

// ValidateCreate refuses a test of a group that does not exist or on a cluster
// it cannot run on, and warns of a test of the same group still running.
func (v *testFailovers) ValidateCreate(ctx context.Context, tf *srv1alpha1.TestFailover) (admission.Warnings, error) {
	g, z, err := groupAndZone(ctx, v.client, tf.Namespace, tf.Spec.ProtectionGroupRef)
	if err != nil {
		return nil, err
	}
	targets := targetsOf(z, g.Spec.ActiveCluster)
	if !contains(targets, tf.Spec.TargetCluster) {
		return nil, fmt.Errorf("targetCluster %q cannot host a test of group %s, which runs on %s; valid targets: %s",
			tf.Spec.TargetCluster, g.Name, g.Spec.ActiveCluster, strings.Join(targets, ", "))
	}
	list := &srv1alpha1.TestFailoverList{}
	if err := v.client.List(ctx, list, client.InNamespace(tf.Namespace)); err != nil {
		return nil, err
	}
	var warnings admission.Warnings
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name == tf.Name || o.Spec.ProtectionGroupRef.Name != g.Name ||
			o.Status.Phase == srv1alpha1.TestFailoverSucceeded || o.Status.Phase == srv1alpha1.TestFailoverFailed {
			continue
		}
		warnings = append(warnings, fmt.Sprintf("TestFailover %s of group %s is still running (phase %s); both tests will run, each in its own isolated namespace",
			o.Name, g.Name, phaseOrPending(o.Status.Phase)))
	}
	return warnings, nil
}

// ValidateUpdate accepts every update.
func (v *testFailovers) ValidateUpdate(context.Context, *srv1alpha1.TestFailover, *srv1alpha1.TestFailover) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete accepts every deletion: the test cleans up after itself.
func (v *testFailovers) ValidateDelete(context.Context, *srv1alpha1.TestFailover) (admission.Warnings, error) {
	return nil, nil
}
