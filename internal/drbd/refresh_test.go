package drbd

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRefreshTakesTheReadFiguresAndKeepsTheStreamsStates: events2 left the
// out-of-sync figure of the disconnect; a status --json reading replaces the
// statistics and leaves the states as the stream reported them.
func TestRefreshTakesTheReadFiguresAndKeepsTheStreamsStates(t *testing.T) {
	tr := NewTracker()
	for _, line := range readLines(t, "testdata/events2_disconnected.txt")[:8] { // the dump only
		ev, err := ParseEvent(line)
		require.NoError(t, err)
		tr.Apply(ev)
	}
	data, err := os.ReadFile("testdata/status_disconnected.json")
	require.NoError(t, err)
	read, err := StatusFromJSON(data)
	require.NoError(t, err)
	require.Len(t, read, 1)
	read[0].Connections[1].PeerDevices[0] = PeerDeviceStatus{Volume: 0, ReplicationState: "Off", OutOfSyncBytes: 9 << 20, SentKiB: 61440 + 8}
	read[0].Connections[1] = ConnectionStatus{PeerNodeID: 1, ConnectionState: "Connected", PeerDevices: read[0].Connections[1].PeerDevices}

	require.True(t, tr.Refresh(read[0]))
	r, _ := tr.Get("vm-disk-3")
	pd := r.Connections[1].PeerDevices[0]
	assert.Equal(t, uint64(9<<20), pd.OutOfSyncBytes, "the read figure replaces the stream's")
	assert.Equal(t, uint64(8), pd.SentDeltaKiB)
	assert.Equal(t, "Connecting", r.Connections[1].ConnectionState, "states stay as events2 reported them")

	read[0].Name = "not-tracked"
	assert.False(t, tr.Refresh(read[0]), "a resource events2 does not know is not invented")
}
