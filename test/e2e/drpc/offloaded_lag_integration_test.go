package drpc_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/sim/storagearray"
)

const (
	lagPolicy = "offloaded-1m"
	// lagObjective is the group's RPO objective: six of the array's cycles, so
	// that a healthy link never passes it and a paused one soon does.
	lagObjective = 12
	arrayCycle   = 2 * time.Second
)

// TestOffloadedGroupLag follows the lag of an Offloaded group whose storage
// replicates in cycles (schedulingInterval 1m) from the array to the monitor:
// the global VGR's lastSyncTime becomes the VRG's lastGroupSyncTime, the
// DRPC's, then the ReplicationGroupStatus's lag. With the link up the group is
// healthy and its interval and last sync are exported; with the link down the
// lag passes the objective and an RPOEvent opens; once the link is back the
// event is Resolved.
func TestOffloadedGroupLag(t *testing.T) {
	link := &storagearray.Sync{Interval: arrayCycle}
	z := newZoneWith(t, env.OffloadedZone{Policy: lagPolicy, SchedulingInterval: "1m", Sync: link})
	const app = "lag-app"
	z.addAppWith(app, env.Primary, lagPolicy, srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: lagObjective})

	// status reads the group's ReplicationGroupStatus, which the monitor
	// creates shortly after the group: until then the poll goes on.
	status := func() (srv1alpha1.ReplicationGroupStatusStatus, error) {
		st := &srv1alpha1.ReplicationGroupStatus{}
		err := z.Client(env.Quorum).Get(ctx, keyOf(app), st)
		return st.Status, err
	}
	env.Eventually(t, timeout, "a healthy group with the array's sync time", func() error {
		st, err := status()
		if err != nil {
			return err
		}
		if st.Health != srv1alpha1.HealthHealthy || !st.FailoverReady || st.MaxLagSeconds > lagObjective {
			return fmt.Errorf("status %+v", st)
		}
		if d := z.drpc(app); d.Status.LastGroupSyncTime == nil {
			return fmt.Errorf("the DRPC has no lastGroupSyncTime")
		}
		got := gauges(t, app)
		if got["siterecovery_replication_sync_interval_seconds"] != 60 || got["siterecovery_replication_last_sync_timestamp_seconds"] == 0 {
			return fmt.Errorf("metrics %v", got)
		}
		return nil
	})
	st, err := status()
	require.NoError(t, err)
	require.Empty(t, st.ActiveRPOEvent)

	// The link goes down: no cycle ends, the lag grows past the objective.
	link.Pause()
	var event string
	env.Eventually(t, timeout, "an RPOEvent while the link is down", func() error {
		st, err := status()
		if err != nil {
			return err
		}
		if st.Health != srv1alpha1.HealthDegraded || st.ActiveRPOEvent == "" {
			return fmt.Errorf("status %+v", st)
		}
		ev := &srv1alpha1.RPOEvent{}
		if err := z.Client(env.Quorum).Get(ctx, keyOf(st.ActiveRPOEvent), ev); err != nil {
			return err
		}
		if want := fmt.Sprintf("exceeds the objective of %ds", lagObjective); !strings.Contains(ev.Status.Message, want) {
			return fmt.Errorf("RPOEvent message %q lacks %q", ev.Status.Message, want)
		}
		event = ev.Name
		return nil
	})

	// The link is back: cycles end again and the event is resolved.
	link.Resume()
	env.Eventually(t, timeout, "the RPOEvent resolved once the link is back", func() error {
		st, err := status()
		if err != nil {
			return err
		}
		ev := &srv1alpha1.RPOEvent{}
		if err := z.Client(env.Quorum).Get(ctx, keyOf(event), ev); err != nil {
			return err
		}
		if ev.Status.State != srv1alpha1.RPOEventResolved || st.Health != srv1alpha1.HealthHealthy || st.ActiveRPOEvent != "" {
			return fmt.Errorf("event %s %+v, status %+v", ev.Status.State, ev.Status, st)
		}
		if ev.Status.PeakLagSeconds <= lagObjective {
			return fmt.Errorf("peak lag %ds within the objective", ev.Status.PeakLagSeconds)
		}
		return nil
	})
}
