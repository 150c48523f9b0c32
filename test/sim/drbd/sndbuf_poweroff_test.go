package drbdsim_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/drbd"
)

// TestProtocolASendBufferBoundsTheWindow: under protocol A a write completes
// once it is in the send buffer, and DRBD blocks the writer while the buffer
// is full (on-congestion block, its default). So sndbuf-size bounds what a
// cut loses: the writer blocked on a full buffer goes on when the cut drops
// the window, and the peer lacks at most sndbuf-size of acknowledged writes.
func TestProtocolASendBufferBoundsTheWindow(t *testing.T) {
	c := newFileCluster(t, fileOpts{protocol: "A", net: "sndbuf-size 16k;"})
	c.upSynced()
	for i := range 4 {
		require.NoError(t, c.fabric.WriteDevice("site-a", fminor, int64(i)*4096, pattern(byte(10+i), 4096)), "write %d fits in the buffer", i)
	}
	blocked := make(chan error, 1)
	go func() { blocked <- c.fabric.WriteDevice("site-a", fminor, 4*4096, pattern(14, 4096)) }()
	// The fifth write waits for room: nothing of it is on the local disk
	// while the buffer is full, and events2 shows the buffer's 16 KiB.
	require.Never(t, func() bool { return len(blocked) > 0 }, 300*time.Millisecond, 20*time.Millisecond, "the writer blocks on a full send buffer")
	assert.NotEqual(t, pattern(14, 4096), readFileAt(t, c.disk["site-a"], 4*4096, 4096), "a blocked write has not completed")

	require.NoError(t, c.fabric.Disconnect(fres))
	require.NoError(t, <-blocked, "the cut drops the window, and the writer goes on")
	lost := 0
	for i := range 5 {
		if !bytes.Equal(pattern(byte(10+i), 4096), readFileAt(t, c.disk["site-b"], int64(i)*4096, 4096)) {
			lost++
		}
	}
	assert.Equal(t, 5, lost, "the peer got none of the buffered writes, nor the one made after the cut")
	assert.Equal(t, uint64(20<<10), peerPD(c.status("site-a")).OutOfSyncBytes, "the lost window and the later write are out of sync, for the resync")
}

// TestPowerOffStopsTheNodeWithoutAFlush: a power cut takes the Primary's
// resource down at once, open device and all: its protocol A window never
// reaches the peer, which sees the node vanish (not depart). Brought up
// again, the node is Secondary, and the window's blocks resync from it once
// it is made Primary again.
func TestPowerOffStopsTheNodeWithoutAFlush(t *testing.T) {
	c := newFileCluster(t, fileOpts{protocol: "A"})
	c.upSynced()
	require.NoError(t, c.fabric.OpenDevice("site-a", fminor, "vm"))
	require.NoError(t, c.fabric.WriteDevice("site-a", fminor, 0, pattern(21, 8192)))
	require.NoError(t, c.fabric.PowerOff("site-a"))
	st, err := c.fabric.Node(fres, "site-a")
	require.NoError(t, err)
	assert.False(t, st.Up, "the resource is down without drbdadm down, whatever held it open")
	assert.NotEqual(t, pattern(21, 8192), readFileAt(t, c.disk["site-b"], 0, 8192), "the window died with the node")
	peer := c.waitFor("site-b", "the peer gone", func(st drbd.ResourceStatus) bool { return peerPD(st).ReplicationState == "Off" })
	assert.Equal(t, "Connecting", peer.Connections[0].ConnectionState, "the peer keeps trying: the node vanished, it did not leave")

	c.must("site-a", "up", fres)
	assert.Equal(t, "Secondary", c.status("site-a").Role, "a node comes back Secondary")
	c.must("site-a", "primary", fres)
	c.waitUpToDate()
	assert.Equal(t, pattern(21, 8192), readFileAt(t, c.disk["site-b"], 0, 8192), "the lost window resyncs from the node's disk")
}
