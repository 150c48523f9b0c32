package drpc_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestDRPCConfirmationIsUsedOnce: the typed confirmation of a DRPC Failover
// (siterecovery.trilio.io/confirm, which the protectionzone chart's policy
// asks for on the write that starts it) is taken off the DRPC once the
// Failover has been taken, so that the next Failover of that DRPC, here
// one back to the primary, must be confirmed anew.
func TestDRPCConfirmationIsUsedOnce(t *testing.T) {
	z := newZone(t)
	P, D := env.Primary, env.DR
	z.InstallConfirmationPolicy(t)
	z.addApp("app-1", P)
	z.requireDeployed("app-1", P, D)

	z.updateDRPC("app-1", func(d *drv1alpha1.DRPlacementControl) {
		d.Spec.Action, d.Spec.FailoverCluster = drv1alpha1.ActionFailover, D
		d.Annotations = map[string]string{srv1alpha1.ConfirmAnnotation: "app-1"}
	})
	z.waitDRPC("app-1", drv1alpha1.DRStateFailedOver, D)
	env.Eventually(t, timeout, "the used confirmation removed", func() error {
		if v, ok := z.drpc("app-1").Annotations[srv1alpha1.ConfirmAnnotation]; ok {
			return fmt.Errorf("%s is still %q", srv1alpha1.ConfirmAnnotation, v)
		}
		return nil
	})

	d := z.drpc("app-1")
	before := d.DeepCopy()
	d.Spec.FailoverCluster = P
	err := z.Client(env.Quorum).Patch(ctx, d, client.MergeFrom(before), client.DryRunAll)
	require.ErrorContains(t, err, "siterecovery-confirm-drpc-failover")
	require.ErrorContains(t, err, `confirm it by setting the annotation siterecovery.trilio.io/confirm: "app-1" on the DRPlacementControl in the same write`)
}
