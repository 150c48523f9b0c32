package drbd

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func loadStatus(t *testing.T, path string) []ResourceStatus {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	st, err := StatusFromJSON(data)
	require.NoError(t, err)
	return st
}

func TestStatusJSONResync(t *testing.T) {
	st := loadStatus(t, "testdata/status_resync.json")
	require.Len(t, st, 1)
	r := st[0]
	assert.Equal(t, "vm-disk-2", r.Name)
	assert.Equal(t, 0, r.NodeID)
	assert.False(t, r.LacksQuorum())
	assert.Equal(t, uint64(20971520), r.Devices[0].SizeKiB)
	pd := r.Connections[1].PeerDevices[0]
	assert.Equal(t, "SyncSource", pd.ReplicationState)
	assert.Equal(t, "Inconsistent", pd.PeerDiskState)
	assert.InDelta(t, 41.37, pd.PercentInSync, 1e-9)
	assert.Equal(t, uint64(12296192)*1024, pd.OutOfSyncBytes)
}

func TestStatusJSONDisconnected(t *testing.T) {
	r := loadStatus(t, "testdata/status_disconnected.json")[0]
	assert.True(t, r.LacksQuorum())
	assert.True(t, r.Suspended)
	assert.Equal(t, "quorum", r.SuspendedReason)
	assert.Equal(t, "Connecting", r.Connections[1].ConnectionState)
	assert.Equal(t, "Unknown", r.Connections[1].PeerRole)
	assert.Equal(t, "StandAlone", r.Connections[2].ConnectionState)
	assert.Equal(t, "DUnknown", r.Connections[1].PeerDevices[0].PeerDiskState)
}

func TestStatusJSONWrapCounters(t *testing.T) {
	r := loadStatus(t, "testdata/status_wrap.json")[0]
	assert.Equal(t, uint64(18446744073709551515), r.Connections[0].PeerDevices[0].ReceivedKiB)
	assert.Equal(t, uint64(18446744073709551515), r.Devices[0].WrittenKiB)
}

func TestStatusJSONEmptyAndErrors(t *testing.T) {
	st := loadStatus(t, "testdata/status_empty.json")
	assert.Empty(t, st)
	st, err := StatusFromJSON(nil)
	require.NoError(t, err)
	assert.Empty(t, st)
	for _, bad := range []string{"{", `{"name":"x"}`, `[{"role":"Primary"}]`, `[{"name":"r","devices":[{"volume":"x"}]}]`} {
		_, err := StatusFromJSON([]byte(bad))
		assert.Error(t, err, bad)
	}
}

// TestStatusMatchesTracker: the same situation seen through events2 and
// status --json lands in the same model (modulo fields only one source
// has).
func TestStatusMatchesTracker(t *testing.T) {
	tr := NewTracker()
	lines := readLines(t, "testdata/events2_resync.txt")
	for _, line := range lines[:6] {
		ev, err := ParseEvent(line)
		require.NoError(t, err)
		tr.Apply(ev)
	}
	fromEvents, _ := tr.Get("vm-disk-2")
	fromJSON := loadStatus(t, "testdata/status_resync.json")[0]
	assert.Equal(t, fromJSON.Connections[1].PeerDevices[0].PercentInSync, fromEvents.Connections[1].PeerDevices[0].PercentInSync)
	assert.Equal(t, fromJSON.Connections[1].PeerDevices[0].OutOfSyncBytes, fromEvents.Connections[1].PeerDevices[0].OutOfSyncBytes)
	assert.Equal(t, fromJSON.Devices, fromEvents.Devices)
	assert.Equal(t, fromJSON.Role, fromEvents.Role)
}
