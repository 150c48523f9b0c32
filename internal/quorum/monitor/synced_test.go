package monitor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestAggregateSynced: the lag of a VolSync or Offloaded group is the time
// since its last complete sync; passing the objective opens one RPOEvent,
// and a new sync ends it.
func TestAggregateSynced(t *testing.T) {
	group := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "pg"},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "vm-b"}, {Namespace: "apps", Name: "vm-a"}}}}
	synced := t0.Add(-40 * time.Second)
	in := Input{Group: group, Generation: 1, ObjectiveSeconds: 60, Now: t0}
	s := Synced{LastSyncTime: &synced, Since: t0.Add(-time.Hour), Tracked: true, Protected: true}

	out := AggregateSynced(in, s)
	require.Equal(t, int64(40), out.Status.MaxLagSeconds)
	require.Equal(t, srv1alpha1.HealthHealthy, out.Status.Health)
	require.True(t, out.Status.FailoverReady)
	require.Nil(t, out.Episode)
	require.Equal(t, "vm-a", out.Status.VirtualMachines[0].Name)
	require.Equal(t, t0.Add(21*time.Second), *out.NextBreach, "re-evaluated as the lag passes the objective")

	// 30 s later the sync is 70 s old: one RPOEvent from when it passed 60 s.
	in.Previous, in.Now = &out.Status, t0.Add(30*time.Second)
	out = AggregateSynced(in, s)
	require.Equal(t, srv1alpha1.HealthDegraded, out.Status.Health)
	require.NotNil(t, out.Episode)
	require.Equal(t, EpisodeStart, out.Episode.Action)
	require.Equal(t, synced.Add(60*time.Second), out.Episode.Spec.StartTime.Time)
	require.Equal(t, []string{"apps/vm-a", "apps/vm-b"}, out.Episode.Status.AffectedVMs)
	require.Equal(t, "replication lag 70s exceeds the objective of 60s", out.Episode.Status.Message)

	// A new sync ends the episode.
	ev := &srv1alpha1.RPOEvent{ObjectMeta: metav1.ObjectMeta{Name: out.Episode.Name}, Spec: out.Episode.Spec, Status: out.Episode.Status}
	fresh := in.Now.Add(-time.Second)
	in.Previous, in.Event, in.Now = &out.Status, ev, in.Now.Add(time.Second)
	s.LastSyncTime = &fresh
	out = AggregateSynced(in, s)
	require.Equal(t, EpisodeEnd, out.Episode.Action)
	require.Empty(t, out.Status.ActiveRPOEvent)

	// Never synced: the lag counts from the start of protection; storage that
	// replicates on its own (0m) has no lag to measure.
	out = AggregateSynced(Input{Group: group, ObjectiveSeconds: 60, Now: t0}, Synced{Since: t0.Add(-10 * time.Second), Tracked: true})
	require.Equal(t, int64(10), out.Status.MaxLagSeconds)
	require.Equal(t, srv1alpha1.HealthSyncing, out.Status.Health)
	require.False(t, out.Status.FailoverReady)
	out = AggregateSynced(Input{Group: group, ObjectiveSeconds: 60, Now: t0}, Synced{Since: t0.Add(-time.Hour), Protected: true})
	require.Zero(t, out.Status.MaxLagSeconds)
	require.Equal(t, srv1alpha1.HealthHealthy, out.Status.Health)
	require.True(t, out.Status.FailoverReady)
}
