package drbdsim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/drbd"
)

// TestProtocolAInFlightIsCountedUntilOnThePeer: a protocol A write completes
// on the Primary while its bytes are still on their way; the connection's
// ap-in-flight (status --json, in 512-byte sectors) counts them until they
// are on the peer's disk, and reads 0 once the peer's bytes equal the
// Primary's. Protocol C leaves nothing in flight once a write completed.
func TestProtocolAInFlightIsCountedUntilOnThePeer(t *testing.T) {
	c := newFileCluster(t, fileOpts{protocol: "A"})
	c.upSynced()
	require.NoError(t, c.fabric.WriteDevice("site-a", fminor, 0, pattern(31, 12288)))
	assert.NotEqual(t, pattern(31, 12288), readFileAt(t, c.disk["site-b"], 0, 12288), "acknowledged, not on the peer yet")
	assert.Equal(t, uint64(24), inFlight(c.status("site-a")), "12 KiB in flight: 24 sectors")
	assert.Contains(t, c.statusJSON("site-a"), `"ap-in-flight": 24,`)
	assert.Zero(t, inFlight(c.status("site-b")), "the receiver has nothing of its own in flight")

	require.NoError(t, c.fabric.Drain(fres))
	assert.Equal(t, pattern(31, 12288), readFileAt(t, c.disk["site-b"], 0, 12288), "delivered")
	assert.Zero(t, inFlight(c.status("site-a")), "nothing in flight once the peer holds the bytes")

	cc := newFileCluster(t, fileOpts{protocol: "C"})
	cc.upSynced()
	require.NoError(t, cc.fabric.WriteDevice("site-a", fminor, 0, pattern(32, 8192)))
	assert.Equal(t, pattern(32, 8192), readFileAt(t, cc.disk["site-b"], 0, 8192))
	assert.Zero(t, inFlight(cc.status("site-a")), "protocol C completes a write on the peer's ack")
}

func inFlight(r drbd.ResourceStatus) uint64 {
	for _, c := range r.Connections {
		return c.APInFlightSectors
	}
	return 0
}

// TestProtocolAConnectionIsCongestedAboveFourFifthsOfTheSendBuffer: DRBD
// flags a connection congested while its data socket holds more than four
// fifths of the send buffer (drbd_transport_tcp.c dtt_update_congested in
// LINBIT/drbd). With sndbuf-size 20k, 16 KiB in flight is exactly four
// fifths and not congested; 20 KiB is. Delivering the window clears it.
func TestProtocolAConnectionIsCongestedAboveFourFifthsOfTheSendBuffer(t *testing.T) {
	c := newFileCluster(t, fileOpts{protocol: "A", net: "sndbuf-size 20k;"})
	c.upSynced()
	for i := range 4 {
		require.NoError(t, c.fabric.WriteDevice("site-a", fminor, int64(i)*4096, pattern(byte(40+i), 4096)))
	}
	assert.False(t, conn(c.status("site-a")).Congested, "16 KiB of a 20 KiB buffer")
	assert.Contains(t, c.statusJSON("site-a"), `"congested": false,`)
	require.NoError(t, c.fabric.WriteDevice("site-a", fminor, 4*4096, pattern(44, 4096)))
	assert.True(t, conn(c.status("site-a")).Congested, "20 KiB of a 20 KiB buffer")
	assert.Contains(t, c.statusJSON("site-a"), `"congested": true,`)
	assert.False(t, conn(c.status("site-b")).Congested, "the receiver sends nothing")
	assert.Contains(t, c.statusJSON("site-b"), `"congested": false,`)

	require.NoError(t, c.fabric.Drain(fres))
	assert.False(t, conn(c.status("site-a")).Congested, "the window delivered")
	assert.Zero(t, conn(c.status("site-a")).APInFlightSectors)
}

func conn(r drbd.ResourceStatus) drbd.ConnectionStatus {
	for _, c := range r.Connections {
		return c
	}
	return drbd.ConnectionStatus{}
}
