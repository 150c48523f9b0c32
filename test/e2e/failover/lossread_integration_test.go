package failover_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestUnplannedFailoverReadsWhatTheSourceWroteAlone: the replication link is
// down and the source's VM writes on. DRBD's events report none of it (the
// figure stays the one of the disconnect), so DataLossPossible must come
// from a reading at promotion time: the source's API server answers, and its
// agent reads DRBD's current figures for the request.
func TestUnplannedFailoverReadsWhatTheSourceWroteAlone(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 1})
	z.waitReachable(env.Primary) // as in production, where the zone was connected long before
	vm := z.vms[0]
	z.primaryWithoutQuorum()
	require.NoError(t, z.DRBD(t).Disconnect(drbdName(vm)))
	z.waitDRBD(env.Primary, vm, "disconnected", func(r *srv1alpha1.DRBDResource) bool {
		return len(r.Status.Peers) == 1 && r.Status.Peers[0].ConnectionState != "Connected"
	})
	require.NoError(t, z.DRBD(t).Write(drbdName(vm), env.Nodes[env.Primary].Name, 256)) // KiB the target never gets

	fr := z.waitPhase(z.failover("read-loss", env.DR, srv1alpha1.FailoverUnplanned), srv1alpha1.FailoverCompleted)
	risk := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionDataLossRisk)
	require.NotNil(t, risk)
	require.Equal(t, srv1alpha1.ReasonLossRead, risk.Reason, risk.Message)
	require.Contains(t, risk.Message, fmt.Sprintf("DRBD on %s, read at promotion time, has %d bytes out of sync across 1 replicas (%s %d)",
		env.Primary, 256<<10, drbdName(vm), 256<<10))
	r := z.drbd(env.Primary, vm)
	require.Equal(t, string(fr.UID), r.Status.StatusAnswered, "the source's agent answered this request's reading")
	z.assertActive(env.DR)
}
