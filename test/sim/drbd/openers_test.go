package drbdsim_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/drbd"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
)

// TestOpenersBlockSecondaryAndDown: an open device refuses secondary and
// down with DRBD's SS_DEVICE_IN_USE; status and events2 show it open; a
// closed opener lingers for the close linger.
func TestOpenersBlockSecondaryAndDown(t *testing.T) {
	c := newFileCluster(t, fileOpts{})
	c.upSynced()
	require.NoError(t, c.fabric.OpenDevice("site-a", fminor, "vm"))
	assert.Contains(t, c.statusJSON("site-a"), `"open": true`)
	assert.Contains(t, c.events("site-a"), "open:yes")
	for _, cmd := range []string{"secondary", "down"} {
		err := c.drbdadm("site-a", cmd, fres)
		var ee *drbd.ExitError
		require.ErrorAs(t, err, &ee, cmd)
		assert.Equal(t, 11, ee.ExitCode, cmd)
		assert.Contains(t, ee.Stderr, "State change failed: (-12) Device is held open by someone", cmd)
	}
	require.NoError(t, c.fabric.SetCloseLinger(300*time.Millisecond))
	require.NoError(t, c.fabric.CloseDevice("site-a", fminor, "vm"))
	require.Error(t, c.drbdadm("site-a", "secondary", fres), "still lingering")
	time.Sleep(400 * time.Millisecond)
	c.must("site-a", "secondary", fres)
	assert.Contains(t, c.statusJSON("site-a"), `"open": false`)
	assert.Contains(t, c.events("site-a"), "open:no")
	c.must("site-a", "down", fres)
}

// TestMinorBelongsToTheResourceThatIsUp: a resource torn down leaves its
// minor to the next resource brought up with it. Opening /dev/drbd<minor>
// reaches the one that is up, whose `secondary` the open then blocks.
func TestMinorBelongsToTheResourceThatIsUp(t *testing.T) {
	c := newCluster(t, "C")
	ctx := context.Background()
	old := drbd.ResourceConfig{Name: "a-old", Protocol: "C",
		Nodes: []drbd.NodeConfig{{Hostname: "site-a", NodeID: 0, Address: "10.0.0.1", Port: 7001},
			{Hostname: "site-b", NodeID: 1, Address: "10.0.0.2", Port: 7001}},
		Volumes: []drbd.VolumeConfig{{Number: 0, Minor: 1000, Disk: "/dev/vg0/old-disk"}}}
	data, err := old.Render()
	require.NoError(t, err)
	_, err = drbd.WriteFileAtomic(filepath.Join(filepath.Dir(c.cfg), "res.d"), "a-old.res", data)
	require.NoError(t, err)
	a := c.adm4("site-a")
	require.NoError(t, a.CreateMD(ctx, "a-old", 0))
	require.NoError(t, a.Up(ctx, "a-old"))
	require.NoError(t, a.Down(ctx, "a-old"))

	c.primaryInSync()
	require.NoError(t, c.fabric.OpenDevice("site-a", 1000, "qemu"), "the minor is r0's, which is up")
	err = a.Secondary(ctx, res)
	var ee *drbd.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, ee.Stderr, "(-12) Device is held open by someone")
	require.NoError(t, c.fabric.CloseDevice("site-a", 1000, "qemu"))
	require.ErrorIs(t, c.fabric.CloseDevice("site-a", 1000, "qemu"), drbdsim.ErrNotHeld)
	require.NoError(t, a.Secondary(ctx, res))
}

// TestDownForgetsStandAlone: `down` destroys a node's connections, so the
// next `up` connects again instead of keeping a StandAlone from before.
func TestDownForgetsStandAlone(t *testing.T) {
	c := newCluster(t, "C")
	c.primaryInSync()
	a := c.adm4("site-a")
	ctx := context.Background()
	_, err := c.adm4("site-b").Exec.Run(ctx, c.adm, "-c", c.cfg, "disconnect", res)
	require.NoError(t, err)
	c.waitFor("site-a", "site-b StandAlone", func(r drbd.ResourceStatus) bool {
		return len(r.Connections) == 1 && r.Connections[1].ConnectionState != "Connected"
	})
	require.NoError(t, a.Secondary(ctx, res))
	b := c.adm4("site-b")
	require.NoError(t, b.Down(ctx, res))
	require.NoError(t, b.Up(ctx, res))
	c.waitFor("site-b", "connected again after down and up", func(r drbd.ResourceStatus) bool {
		for _, conn := range r.Connections {
			return conn.ConnectionState == "Connected"
		}
		return false
	})
}
