package monitor_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

func healthy(r *srv1alpha1.ReplicationGroupStatus) error {
	if r.Status.Health != srv1alpha1.HealthHealthy || !r.Status.FailoverReady || r.Status.ActiveRPOEvent != "" {
		return fmt.Errorf("health %q failoverReady %v active %q", r.Status.Health, r.Status.FailoverReady, r.Status.ActiveRPOEvent)
	}
	return nil
}

// TestReplicationMonitor drives one zone through the monitor's contract: it
// creates the status, writes nothing while nothing changes, raises exactly one
// RPOEvent per breach episode, and keeps the lag continuous across a restart.
func TestReplicationMonitor(t *testing.T) {
	z := newMonitorZone(t, 2)
	vm0 := z.vms[0]
	res0 := srv1alpha1.DRBDResourceName(vm0)

	r := z.waitStatus("a healthy status", healthy)
	require.Equal(t, int32(objective), r.Spec.RPOObjectiveSeconds, "defaulted from the group")
	require.Equal(t, int32(30), r.Spec.PollingIntervalSeconds)
	require.Len(t, r.Status.VirtualMachines, 2)
	v := volume0(r, vm0)
	require.Equal(t, "Connected", v.ConnectionState)
	require.Equal(t, "UpToDate", v.DiskState)
	require.Equal(t, "UpToDate", v.PeerDiskState)
	require.Equal(t, "Established", v.ReplicationState)
	require.Equal(t, "100.00", v.PercentInSync)

	t.Run("no status write while nothing changes", func(t *testing.T) {
		rv := z.rgs().ResourceVersion
		for range 10 {
			z.clock.Step(10 * time.Second)
			z.poke()
		}
		require.Equal(t, rv, z.rgs().ResourceVersion, "10 evaluations over 100s of a quiet zone wrote nothing")
	})

	t.Run("one RPOEvent per breach episode", func(t *testing.T) {
		require.NoError(t, z.fabric.Disconnect(res0))
		r := z.waitStatus("vm-00 disconnected", func(r *srv1alpha1.ReplicationGroupStatus) error {
			if v := volume0(r, vm0); v == nil || v.ConnectionState == "Connected" || r.Status.Health != srv1alpha1.HealthDisconnected {
				return fmt.Errorf("health %q volume %+v", r.Status.Health, v)
			}
			return nil
		})
		inSyncUntil := volume0(r, vm0).LastInSyncTime.Time
		require.False(t, r.Status.FailoverReady)

		z.clock.Step(45 * time.Second)
		z.poke()
		r = z.waitStatus("a breach", func(r *srv1alpha1.ReplicationGroupStatus) error {
			if r.Status.ActiveRPOEvent == "" {
				return fmt.Errorf("lag %d, no active event", r.Status.MaxLagSeconds)
			}
			return nil
		})
		require.GreaterOrEqual(t, r.Status.MaxLagSeconds, int64(45))
		evs := z.events()
		require.Len(t, evs, 1)
		ev := evs[0]
		require.Equal(t, r.Status.ActiveRPOEvent, ev.Name)
		require.Equal(t, srv1alpha1.RPOEventActive, ev.Status.State)
		require.True(t, ev.Spec.StartTime.Time.Equal(inSyncUntil.Add(objective*time.Second)), "start %s, in sync until %s", ev.Spec.StartTime, inSyncUntil)
		require.Equal(t, []string{"apps/" + vm0}, ev.Status.AffectedVMs)
		require.Contains(t, ev.Status.Message, "replication link down")

		// Later evaluations raise the peak of the same event.
		for range 3 {
			z.clock.Step(10 * time.Second)
			z.poke()
		}
		require.Len(t, z.events(), 1, "one event per episode, not per evaluation")

		require.NoError(t, z.fabric.Connect(res0))
		z.waitStatus("in sync again", healthy)
		evs = z.events()
		require.Len(t, evs, 1, "exactly one RPOEvent for the episode")
		ev = evs[0]
		require.Equal(t, srv1alpha1.RPOEventResolved, ev.Status.State)
		require.NotNil(t, ev.Status.EndTime)
		require.NotNil(t, ev.Status.PeakTime)
		require.GreaterOrEqual(t, ev.Status.PeakLagSeconds, int64(75), "the lag until the volume was in sync again")
		require.True(t, ev.Status.EndTime.After(ev.Spec.StartTime.Time))
	})

	t.Run("lag survives a restart", func(t *testing.T) {
		require.NoError(t, z.fabric.Disconnect(res0))
		r := z.waitStatus("vm-00 disconnected", func(r *srv1alpha1.ReplicationGroupStatus) error {
			if v := volume0(r, vm0); v == nil || v.ConnectionState == "Connected" {
				return fmt.Errorf("volume %+v", v)
			}
			return nil
		})
		since := volume0(r, vm0).LastInSyncTime.Time
		z.clock.Step(10 * time.Second)
		z.poke()
		z.waitStatus("lag 10s", func(r *srv1alpha1.ReplicationGroupStatus) error {
			if l := volume0(r, vm0).LagSeconds; l != int64(z.clock.Now().Truncate(time.Second).Sub(since)/time.Second) {
				return fmt.Errorf("lag %d", l)
			}
			return nil
		})

		z.stop()
		z.clock.Step(50 * time.Second)
		z.startMonitor()
		z.poke()
		r = z.waitStatus("lag continued", func(r *srv1alpha1.ReplicationGroupStatus) error {
			want := int64(z.clock.Now().Truncate(time.Second).Sub(since) / time.Second)
			if l := volume0(r, vm0).LagSeconds; l != want {
				return fmt.Errorf("lag %d, want %d", l, want)
			}
			return nil
		})
		require.True(t, volume0(r, vm0).LastInSyncTime.Time.Equal(since), "lastInSyncTime survived the restart")
		require.GreaterOrEqual(t, volume0(r, vm0).LagSeconds, int64(60))
	})
}
