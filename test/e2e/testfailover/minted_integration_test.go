package testfailover_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestTestFailoverWithMintedKubeconfigs runs test failovers with the
// least-privilege kubeconfigs scripts/bootstrap-zone.sh mints and the
// workload chart's admission guard of that identity: the isolated namespace,
// its VM copies, snapshots, probe Jobs, the boot plan's gate Jobs and network
// policy, the group's companion objects, and their removal, all fit inside
// the rights and the shapes the chart grants; a VM with hook sidecars is
// refused at once, and tested with them once the release allows it. The
// scenarios share the zone: a zone costs more than its tests.
func TestTestFailoverWithMintedKubeconfigs(t *testing.T) {
	z := newZoneWith(t, 2, zoneOptions{env: env.Options{MintedKubeconfigs: true, Instancetypes: true}})
	prod := z.production()
	t.Run("no boot plan", func(t *testing.T) {
		z.t = t
		name := z.testFailover("minted", env.DR, nil)
		tf := z.waitPhase(name, srv1alpha1.TestFailoverSucceeded)
		for _, r := range tf.Status.Results {
			require.True(t, r.Passed, "%s/%s: %s", r.VM, r.Check, r.Message)
		}
		require.Len(t, tf.Status.Boot.Stages, 1, "every test VM starts at once, in the implicit stage")
		require.Equal(t, srv1alpha1.ImplicitStageName, tf.Status.Boot.Stages[0].Name)
		require.Equal(t, srv1alpha1.StageSucceeded, tf.Status.Boot.Stages[0].Phase)
		z.assertLeavesNothing(tf)
		z.assertProductionUntouched(prod)
	})
	t.Run("boot plan stages in order", func(t *testing.T) {
		z.t = t
		z.testBootPlanInOrder(t)
		z.assertProductionUntouched(prod)
	})
	t.Run("boot gate times out", func(t *testing.T) {
		z.t = t
		z.testBootGateTimesOut(t)
		z.assertProductionUntouched(prod)
	})
	t.Run("companions in the isolated namespace", func(t *testing.T) {
		z.t = t
		z.testCompanionsInIsolatedNamespace(t)
	})
	t.Run("hook sidecars", func(t *testing.T) {
		z.t = t
		z.testHookSidecars(t)
	})
}
