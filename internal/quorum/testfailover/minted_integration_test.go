package testfailover_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestTestFailoverWithMintedKubeconfigs runs a test failover with the
// least-privilege kubeconfigs scripts/bootstrap-zone.sh mints and the
// workload chart's admission guard of that identity: the isolated namespace,
// its VM copies, snapshots, probe Jobs and network policy, and their removal,
// all fit inside the rights and the shapes the chart grants.
func TestTestFailoverWithMintedKubeconfigs(t *testing.T) {
	z := newZoneWith(t, 1, zoneOptions{env: env.Options{MintedKubeconfigs: true}})
	prod := z.production()
	name := z.testFailover("minted", env.DR, nil)
	tf := z.waitPhase(name, srv1alpha1.TestFailoverSucceeded)
	for _, r := range tf.Status.Results {
		require.True(t, r.Passed, "%s/%s: %s", r.VM, r.Check, r.Message)
	}
	z.assertLeavesNothing(tf)
	z.assertProductionUntouched(prod)
}
