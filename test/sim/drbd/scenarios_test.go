package drbdsim_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/drbd"
)

func TestUpNeedsCreateMD(t *testing.T) {
	c := newCluster(t, "C")
	err := c.adm4("site-a").Up(context.Background(), res)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "No valid meta data found")
}

func TestInitialSyncAndPromotionRules(t *testing.T) {
	c := newCluster(t, "C")
	require.NoError(t, c.fabric.SetSyncRate(50*1024)) // 100 MiB volume: ~2s
	c.bringUp("site-a", "site-b")
	ctx := context.Background()
	a, b := c.adm4("site-a"), c.adm4("site-b")

	st := c.status("site-a")
	assert.Equal(t, "Inconsistent", st.Devices[0].DiskState)
	err := a.Primary(ctx, res, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(-2) Need access to UpToDate data")

	require.NoError(t, a.Primary(ctx, res, true))
	st = c.waitFor("site-a", "resync in progress", func(r drbd.ResourceStatus) bool {
		pd := peerPD(r)
		return pd.ReplicationState == "SyncSource" && pd.PercentInSync > 0 && pd.PercentInSync < 100
	})
	assert.Equal(t, "Inconsistent", peerPD(st).PeerDiskState)
	assert.NotZero(t, peerPD(st).OutOfSyncBytes)

	err = b.Primary(ctx, res, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(-1) Multiple primaries not allowed by config")

	c.waitFor("site-b", "UpToDate", func(r drbd.ResourceStatus) bool {
		pd := peerPD(r)
		return r.Devices[0].DiskState == "UpToDate" && pd.ReplicationState == "Established" && pd.PercentInSync == 100
	})
	// Idempotent operations behave like the real tools.
	require.NoError(t, a.Primary(ctx, res, false))
	require.NoError(t, a.Adjust(ctx, res))
	require.Error(t, a.Up(ctx, res), "up on an up resource fails like drbdadm")
	require.NoError(t, a.Secondary(ctx, res))
	require.NoError(t, b.Primary(ctx, res, false), "UpToDate secondary may promote once the peer demoted")
}

func TestDisconnectLosesQuorumAndResyncs(t *testing.T) {
	c := newCluster(t, "C")
	c.primaryInSync()
	ctx := context.Background()

	require.NoError(t, c.fabric.Write(res, "site-a", 64))
	require.NoError(t, c.fabric.SetSyncRate(1)) // keep the later resync observable
	require.NoError(t, c.fabric.Disconnect(res))
	for _, n := range []string{"site-a", "site-b"} {
		st := c.status(n)
		assert.True(t, st.LacksQuorum(), n)
		conn := st.Connections[1-st.NodeID]
		assert.Equal(t, "Connecting", conn.ConnectionState)
		assert.Equal(t, "Unknown", conn.PeerRole)
		assert.Equal(t, "DUnknown", conn.PeerDevices[0].PeerDiskState)
	}
	assert.ErrorContains(t, c.fabric.Write(res, "site-a", 1), "no quorum")
	err := c.adm4("site-b").Primary(ctx, res, false)
	assert.ErrorContains(t, err, "No quorum")
	require.NoError(t, c.adm4("site-b").Primary(ctx, res, true), "--force is the DR takeover")
	require.NoError(t, c.adm4("site-b").Secondary(ctx, res))

	require.NoError(t, c.fabric.Connect(res))
	st := c.status("site-a")
	assert.False(t, st.LacksQuorum())
	// A peer that leaves gracefully does not count for quorum, so the
	// primary keeps writing and tracks the blocks the peer misses.
	require.NoError(t, c.adm4("site-b").Down(ctx, res))
	require.NoError(t, c.fabric.Write(res, "site-a", 1024))
	assert.Equal(t, uint64(1024*1024), peerPD(c.status("site-a")).OutOfSyncBytes)
	require.NoError(t, c.fabric.SetSyncRate(1024*1024))
	require.NoError(t, c.adm4("site-b").Up(ctx, res))
	c.waitFor("site-a", "resync done", func(r drbd.ResourceStatus) bool {
		pd := peerPD(r)
		return pd.ReplicationState == "Established" && pd.PeerDiskState == "UpToDate" && pd.OutOfSyncBytes == 0
	})
}

// TestProtocolALagThenDrain: protocol A writes in flight leave both disks
// UpToDate on a connected, established pair and nothing out of sync (DRBD
// counts them in the connection's ap-in-flight); they drain at the drain
// rate, and a demote reaches the peer behind what is left (it times out on a
// link that carries nothing), so the peer promoted then holds every write the
// primary completed.
func TestProtocolALagThenDrain(t *testing.T) {
	c := newCluster(t, "A")
	c.bringUp("site-a", "site-b")
	ctx := context.Background()
	require.NoError(t, c.fabric.MarkUpToDate(res, "site-a"))
	require.NoError(t, c.adm4("site-a").Primary(ctx, res, false))
	c.waitFor("site-a", "initial sync", func(r drbd.ResourceStatus) bool { return peerPD(r).PeerDiskState == "UpToDate" })

	require.NoError(t, c.fabric.Write(res, "site-a", 4096))
	st := c.status("site-a")
	assert.Zero(t, peerPD(st).OutOfSyncBytes, "in flight is not out of sync while connected")
	assert.Equal(t, uint64(2*4096), inFlight(st), "4 MiB in flight: 8192 sectors")
	assert.Equal(t, "Established", peerPD(st).ReplicationState)
	assert.Equal(t, "UpToDate", peerPD(st).PeerDiskState, "in flight is not a disk state")
	assert.Equal(t, "UpToDate", c.status("site-b").Devices[0].DiskState)

	require.NoError(t, c.fabric.SetDrainRate(8192))
	c.waitFor("site-a", "lag drained", func(r drbd.ResourceStatus) bool {
		return peerPD(r).OutOfSyncBytes == 0 && inFlight(r) == 0
	})
	require.NoError(t, c.fabric.SetDrainRate(0))
	require.NoError(t, c.fabric.Write(res, "site-a", 10))
	require.NoError(t, c.fabric.Drain(res))
	assert.Zero(t, peerPD(c.status("site-a")).OutOfSyncBytes)

	require.NoError(t, c.fabric.Write(res, "site-a", 64))
	require.NotZero(t, inFlight(c.status("site-a")))
	err := c.adm4("site-a").Secondary(ctx, res)
	require.ErrorContains(t, err, "Timeout in operation", "a link that carries nothing holds the demote behind the writes")
	require.Equal(t, "Primary", c.status("site-a").Role)
	require.NoError(t, c.fabric.SetDrainRate(1)) // KiB/s: the link moves
	require.NoError(t, c.adm4("site-a").Secondary(ctx, res))
	st = c.status("site-b")
	assert.Zero(t, inFlight(c.status("site-a")), "the demote reached site-b behind the writes")
	require.NoError(t, c.fabric.Disconnect(res))
	assert.Zero(t, peerPD(c.status("site-a")).OutOfSyncBytes, "nothing was left to lose with the link")
	require.NoError(t, c.fabric.Connect(res))
	assert.Equal(t, "Secondary", st.Connections[1-st.NodeID].PeerRole)
	require.NoError(t, c.adm4("site-b").Primary(ctx, res, false))
}

// TestEvents2StreamAndParsers runs the real Streamer and Tracker against
// the simulator: every line it prints must parse, and changes must show
// up live.
func TestEvents2StreamAndParsers(t *testing.T) {
	c := newCluster(t, "C")
	c.bringUp("site-a", "site-b")
	require.NoError(t, c.fabric.SetSyncRate(50*1024))

	_, err := exec.Command(c.setup, "events2", "--now", "--statistics", "--timestamps").Output()
	require.Error(t, err, "DRBDSIM_NODE unset in this env")
	now, err := nodeExec{node: "site-a", stateDir: c.stateDir}.Run(context.Background(), c.setup, "events2", "--now", "--statistics")
	require.NoError(t, err)
	require.Contains(t, string(now), "exists -\n")

	tr := drbd.NewTracker()
	var parseErrs []error
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &drbd.Streamer{Exec: nodeExec{node: "site-a", stateDir: c.stateDir}, DrbdsetupPath: c.setup,
		Handle: func(ev drbd.Event) { tr.Apply(ev) }, OnError: func(err error) {
			if ctx.Err() == nil {
				parseErrs = append(parseErrs, err)
			}
		}}
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	waitTracker := func(what string, cond func(drbd.ResourceStatus) bool) {
		require.Eventually(t, func() bool {
			r, ok := tr.Get(res)
			return ok && cond(r)
		}, 10*time.Second, 10*time.Millisecond, what)
	}
	waitTracker("initial state", func(r drbd.ResourceStatus) bool { return r.Connections[1].ConnectionState == "Connected" })
	require.NoError(t, c.adm4("site-a").Primary(context.Background(), res, true))
	waitTracker("resync visible", func(r drbd.ResourceStatus) bool {
		pd := r.Connections[1].PeerDevices[0]
		return pd.ReplicationState == "SyncSource" && pd.PercentInSync > 0 && pd.PercentInSync < 100
	})
	waitTracker("sync finished", func(r drbd.ResourceStatus) bool {
		pd := r.Connections[1].PeerDevices[0]
		return pd.PercentInSync == 100 && pd.PeerDiskState == "UpToDate"
	})
	require.NoError(t, c.fabric.Disconnect(res))
	waitTracker("quorum lost", func(r drbd.ResourceStatus) bool { return r.LacksQuorum() })
	require.NoError(t, c.adm4("site-a").Down(context.Background(), res))
	require.Eventually(t, func() bool { _, ok := tr.Get(res); return !ok }, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Empty(t, parseErrs)
}

// TestStatusJSONParsesInEveryState checks the internal/drbd JSON parser on
// the simulator's status output across states.
func TestStatusJSONParsesInEveryState(t *testing.T) {
	c := newCluster(t, "A")
	out, err := c.adm4("site-a").StatusJSON(context.Background(), "")
	require.NoError(t, err)
	st, err := drbd.StatusFromJSON(out)
	require.NoError(t, err)
	assert.Empty(t, st)
	c.bringUp("site-a")
	assert.True(t, c.status("site-a").LacksQuorum(), "alone in a two-node cluster")
	c.bringUp("site-b")
	require.NoError(t, c.fabric.SetSyncRate(1))
	require.NoError(t, c.adm4("site-b").Primary(context.Background(), res, true))
	st2 := c.status("site-a")
	assert.Equal(t, "SyncTarget", peerPD(st2).ReplicationState)
	assert.Equal(t, "Primary", st2.Connections[1].PeerRole)
}

// A cut of the replication network holds for resources brought up while it
// lasts, as a site link that is down does.
func TestCutLinksHoldsForNewResources(t *testing.T) {
	c := newCluster(t, "C")
	require.NoError(t, c.fabric.CutLinks())
	c.bringUp("site-a", "site-b")
	st := c.status("site-a")
	assert.Equal(t, "Connecting", st.Connections[1-st.NodeID].ConnectionState, "brought up while the links are cut")
	require.NoError(t, c.fabric.RestoreLinks())
	st = c.status("site-a")
	assert.Equal(t, "Connected", st.Connections[1-st.NodeID].ConnectionState, "the links are back")
}
