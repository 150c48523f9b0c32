package drbd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func applyFile(t *testing.T, tr *Tracker, path string) {
	t.Helper()
	for _, line := range readLines(t, path) {
		ev, err := ParseEvent(line)
		require.NoError(t, err, line)
		tr.Apply(ev)
	}
}

func TestTrackerConnected(t *testing.T) {
	tr := NewTracker()
	applyFile(t, tr, "testdata/events2_connected.txt")
	r, ok := tr.Get("vm-disk-1")
	require.True(t, ok)
	assert.Equal(t, "Primary", r.Role)
	assert.True(t, r.MayPromoteKnown)
	assert.False(t, r.MayPromote)
	assert.False(t, r.LacksQuorum())
	d := r.Devices[0]
	assert.Equal(t, 1000, d.Minor)
	assert.Equal(t, "UpToDate", d.DiskState)
	c := r.Connections[1]
	assert.Equal(t, "dr-site-b", c.Name)
	assert.Equal(t, "Connected", c.ConnectionState)
	assert.Equal(t, "Secondary", c.PeerRole)
	pd := c.PeerDevices[0]
	assert.Equal(t, "Established", pd.ReplicationState)
	assert.Equal(t, 100.0, pd.PercentInSync)
	assert.Equal(t, uint64(734520), pd.SentKiB)
	assert.Equal(t, uint64(512), pd.SentDeltaKiB)
}

func TestTrackerResync(t *testing.T) {
	tr := NewTracker()
	lines := readLines(t, "testdata/events2_resync.txt")
	var pcts []float64
	var oos []uint64
	for _, line := range lines {
		ev, err := ParseEvent(line)
		require.NoError(t, err)
		tr.Apply(ev)
		if ev.Object == ObjectPeerDevice {
			r, _ := tr.Get("vm-disk-2")
			pd := r.Connections[1].PeerDevices[0]
			pcts = append(pcts, pd.PercentInSync)
			oos = append(oos, pd.OutOfSyncBytes)
		}
	}
	assert.Equal(t, []float64{41.37, 87.5, 100}, pcts)
	assert.Equal(t, []uint64{12296192 * 1024, 2621440 * 1024, 0}, oos)
}

func TestTrackerDisconnected(t *testing.T) {
	tr := NewTracker()
	lines := readLines(t, "testdata/events2_disconnected.txt")
	for _, line := range lines[:8] { // up to and including "exists -"
		ev, err := ParseEvent(line)
		require.NoError(t, err)
		tr.Apply(ev)
	}
	r, _ := tr.Get("vm-disk-3")
	assert.True(t, r.LacksQuorum())
	assert.True(t, r.Suspended)
	assert.Equal(t, "Connecting", r.Connections[1].ConnectionState)
	assert.Equal(t, "StandAlone", r.Connections[2].ConnectionState)
	assert.Equal(t, "DUnknown", r.Connections[1].PeerDevices[0].PeerDiskState)
	assert.Equal(t, uint64(4096*1024), r.Connections[1].PeerDevices[0].OutOfSyncBytes)
	assert.InDelta(t, 99.90, r.Connections[1].PeerDevices[0].PercentInSync, 0.01)

	for _, line := range lines[8:] {
		ev, err := ParseEvent(line)
		require.NoError(t, err)
		tr.Apply(ev)
	}
	r, _ = tr.Get("vm-disk-3")
	assert.False(t, r.LacksQuorum())
	assert.Equal(t, "Connected", r.Connections[1].ConnectionState)
}

func TestTrackerWrapAroundDelta(t *testing.T) {
	tr := NewTracker()
	applyFile(t, tr, "testdata/events2_wrap.txt")
	r, _ := tr.Get("vm-disk-4")
	pd := r.Connections[1].PeerDevices[0]
	// 18446744073709551515 -> 1000 wraps through 2^64: 101 + 1000.
	assert.Equal(t, uint64(1101), pd.SentDeltaKiB)
	assert.Equal(t, uint64(0), pd.ReceivedDeltaKiB)
}

func TestCounterDelta(t *testing.T) {
	const maxU = ^uint64(0)
	assert.Equal(t, uint64(10), CounterDelta(5, 15))
	assert.Equal(t, uint64(0), CounterDelta(7, 7))
	assert.Equal(t, uint64(11), CounterDelta(maxU-5, 5), "wrap")
	assert.Equal(t, uint64(1), CounterDelta(maxU, 0), "wrap at the boundary")
	assert.Equal(t, uint64(3), CounterDelta(1000, 3), "reset after down/up")
	assert.Equal(t, ^uint64(0), kibToBytes(maxU/512))
}

func TestTrackerHelpersRenameDestroy(t *testing.T) {
	tr := NewTracker()
	var names []string
	for _, line := range readLines(t, "testdata/events2_helpers.txt") {
		ev, err := ParseEvent(line)
		require.NoError(t, err)
		name, changed := tr.Apply(ev)
		if changed {
			names = append(names, name)
		}
	}
	assert.Equal(t, []string{"vm-disk-5", "vm-disk-5", "vm-disk-5", "vm-disk-5b", "vm-disk-5b"}, names)
	assert.Empty(t, tr.Snapshot())
}

// TestTrackerResyncAfterRestart: a second --full dump replaces the state
// and drops what it no longer lists.
func TestTrackerResyncAfterRestart(t *testing.T) {
	tr := NewTracker()
	applyFile(t, tr, "testdata/events2_connected.txt")
	require.Len(t, tr.Snapshot(), 1)
	// A new dump that does not list vm-disk-1 drops it.
	applyFile(t, tr, "testdata/events2_resync.txt")
	snap := tr.Snapshot()
	require.Len(t, snap, 1)
	require.Equal(t, "vm-disk-2", snap[0].Name)

	// Restarted events2: only vm-disk-2 exists now, and its peer has gone.
	for _, line := range []string{
		"exists resource name:vm-disk-2 role:Secondary suspended:no",
		"exists device name:vm-disk-2 volume:0 minor:1001 disk:UpToDate client:no quorum:yes",
	} {
		ev, err := ParseEvent(line)
		require.NoError(t, err)
		tr.Apply(ev)
	}
	ev, _ := ParseEvent("exists -")
	name, changed := tr.Apply(ev)
	assert.Equal(t, "", name)
	assert.False(t, changed, "nothing pruned; the exists lines reported the changes")
	snap = tr.Snapshot()
	require.Len(t, snap, 1)
	assert.Equal(t, "Secondary", snap[0].Role)
	assert.Empty(t, snap[0].Connections)

	// An empty dump removes everything.
	_, changed = tr.Apply(ev)
	assert.True(t, changed)
	assert.Empty(t, tr.Snapshot())
}

// Matching names, sorted, the resources in the state the predicate asks for:
// the node's taint follows the resources that lack quorum.
func TestMatchingNamesTheResourcesThatLackQuorum(t *testing.T) {
	tr := NewTracker()
	for _, line := range []string{
		"exists resource name:vm-b role:Secondary suspended:no",
		"exists device name:vm-b volume:0 minor:1001 disk:UpToDate client:no quorum:no",
		"exists resource name:vm-a role:Secondary suspended:quorum",
		"exists resource name:vm-c role:Primary suspended:no",
		"exists device name:vm-c volume:0 minor:1002 disk:UpToDate client:no quorum:yes",
		"exists -",
	} {
		ev, err := ParseEvent(line)
		require.NoError(t, err)
		tr.Apply(ev)
	}
	lacks := func(r *ResourceStatus) bool { return r.LacksQuorum() }
	assert.Equal(t, []string{"vm-a", "vm-b"}, tr.Matching(lacks))
	ev, err := ParseEvent("change device name:vm-b volume:0 minor:1001 quorum:yes")
	require.NoError(t, err)
	tr.Apply(ev)
	assert.Equal(t, []string{"vm-a"}, tr.Matching(lacks))
}

func TestSnapshotIsDeepCopy(t *testing.T) {
	tr := NewTracker()
	applyFile(t, tr, "testdata/events2_connected.txt")
	s := tr.Snapshot()
	s[0].Devices[0] = DeviceStatus{DiskState: "Failed"}
	c := s[0].Connections[1]
	c.PeerDevices[0] = PeerDeviceStatus{ReplicationState: "Off"}
	r, _ := tr.Get("vm-disk-1")
	assert.Equal(t, "UpToDate", r.Devices[0].DiskState)
	assert.Equal(t, "Established", r.Connections[1].PeerDevices[0].ReplicationState)
}
