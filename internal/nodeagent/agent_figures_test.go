package nodeagent_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/nodeagent"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
)

// scrapeFigures: a protocol A Primary with 3600 KiB of writes the link has
// not delivered shows them at its agent's next scrape, congested (over four
// fifths of the 4 MiB send buffer the agent configures); once delivered,
// the scrape reads nothing in flight. The DRBDResource's status is not how:
// events2 sends no figures with writes.
func scrapeFigures(t *testing.T, e *env, pair func(string, int32) (types.NamespacedName, types.NamespacedName),
	connected func(*srv1alpha1.DRBDResource) bool, a *node, fabric *drbdsim.Fabric) {
	ka, kb := pair("vm-figures", 7030)
	e.waitFor(ka, "configured and connected", connected)
	e.waitFor(kb, "configured and connected", connected)
	require.NoError(t, fabric.MarkUpToDate("vm-figures", "node-a"))
	e.update(ka, func(r *srv1alpha1.DRBDResource) {
		r.Spec.Role, r.Spec.Quorum = srv1alpha1.RolePrimary, srv1alpha1.QuorumForRole(srv1alpha1.RolePrimary)
	})
	e.waitFor(ka, "Primary and in sync", func(r *srv1alpha1.DRBDResource) bool { return r.Status.Role == "Primary" && inSync(r) })
	require.Zero(t, figure(t, a.metrics, nodeagent.MetricDRBDInFlightBytes), "in sync, nothing written")

	require.NoError(t, fabric.Write("vm-figures", "node-a", 3600))
	require.Equal(t, float64(3600<<10), figure(t, a.metrics, nodeagent.MetricDRBDInFlightBytes))
	require.Equal(t, 1.0, figure(t, a.metrics, nodeagent.MetricDRBDCongested))
	require.Zero(t, figure(t, a.metrics, nodeagent.MetricDRBDOutOfSyncBytes), "in flight is not out of sync while connected")

	require.NoError(t, fabric.Drain("vm-figures"))
	require.Zero(t, figure(t, a.metrics, nodeagent.MetricDRBDInFlightBytes))
	require.Zero(t, figure(t, a.metrics, nodeagent.MetricDRBDCongested))
}

// figure scrapes reg and returns the value of the series name of VM figures
// towards node-b; it fails the test when there is not exactly one.
func figure(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	var got []float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["vm"] == "figures" && l["peer"] == "node-b" && l["node"] == "node-a" && l["protocol"] == "A" {
				got = append(got, m.GetGauge().GetValue())
			}
		}
	}
	require.Len(t, got, 1, "%s of VM figures", name)
	return got[0]
}
