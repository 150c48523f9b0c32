package drbdsim_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/drbd"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
)

const (
	fres   = "vm-data"
	fminor = 1100
)

// fileCluster is two nodes, site-a and site-b, each with its own resource
// file naming its own backing image file: volumes with contents.
type fileCluster struct {
	t        *testing.T
	stateDir string
	fabric   *drbdsim.Fabric
	cfg      map[string]string // node → drbd.conf
	disk     map[string]string // node → backing image
	meta     map[string]string // node → external meta image, if any
	binaries bool              // built drbdsim binaries and the state file
	adm, set string
}

type fileOpts struct {
	protocol string
	net      string // extra net section statements
	size     int64
	external bool
	binaries bool
}

func newFileCluster(t *testing.T, o fileOpts) *fileCluster {
	t.Helper()
	if o.protocol == "" {
		o.protocol = "C"
	}
	if o.size == 0 {
		o.size = 8 << 20
	}
	dir := t.TempDir()
	c := &fileCluster{t: t, stateDir: filepath.Join(dir, "state"), cfg: map[string]string{},
		disk: map[string]string{}, meta: map[string]string{}, binaries: o.binaries}
	c.fabric = &drbdsim.Fabric{StateDir: c.stateDir}
	if o.binaries {
		c.adm, c.set = drbdsim.Build(t, dir)
	} else {
		drbdsim.UseMemory(t, c.stateDir)
		c.adm, c.set = "/sbin/drbdadm", "/sbin/drbdsetup"
	}
	for _, node := range []string{"site-a", "site-b"} {
		c.disk[node] = filepath.Join(dir, node+".img")
		sparse(t, c.disk[node], o.size)
		meta := "internal"
		if o.external {
			c.meta[node] = filepath.Join(dir, node+".meta")
			sparse(t, c.meta[node], drbd.ExternalMetaSize(o.size, 1))
			meta = c.meta[node]
		}
		res := fmt.Sprintf(`resource %s {
    net { protocol %s; %s }
    options { quorum off; }
    volume 0 { device minor %d; disk %s; meta-disk %s; }
    on site-a { node-id 0; address ipv4 10.0.0.1:7000; }
    on site-b { node-id 1; address ipv4 10.0.0.2:7000; }
}
`, fres, o.protocol, o.net, fminor, c.disk[node], meta)
		c.cfg[node] = filepath.Join(dir, node+".conf")
		require.NoError(t, os.WriteFile(c.cfg[node], []byte(res), 0o644))
	}
	return c
}

func sparse(t *testing.T, path string, size int64) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	require.NoError(t, os.Truncate(path, size))
}

func (c *fileCluster) exec(node string) drbd.Executor {
	if c.binaries {
		return nodeExec{node: node, stateDir: c.stateDir}
	}
	return drbdsim.Executor{StateDir: c.stateDir, Node: node}
}

// drbdadm runs drbdadm -c <node's config> args... on node.
func (c *fileCluster) drbdadm(node string, args ...string) error {
	_, err := c.exec(node).Run(context.Background(), c.adm, append([]string{"-c", c.cfg[node]}, args...)...)
	return err
}

func (c *fileCluster) must(node string, args ...string) {
	c.t.Helper()
	require.NoError(c.t, c.drbdadm(node, args...), "%s: drbdadm %v", node, args)
}

func (c *fileCluster) status(node string) drbd.ResourceStatus {
	c.t.Helper()
	a := &drbd.Adm{Exec: c.exec(node), DrbdadmPath: c.adm, DrbdsetupPath: c.set, ConfigFile: c.cfg[node]}
	st, err := a.Status(context.Background(), fres)
	require.NoError(c.t, err)
	require.Len(c.t, st, 1)
	return st[0]
}

func (c *fileCluster) statusJSON(node string) string {
	c.t.Helper()
	out, err := c.exec(node).Run(context.Background(), c.set, "status", "--json", fres)
	require.NoError(c.t, err)
	return string(out)
}

func (c *fileCluster) events(node string) string {
	c.t.Helper()
	out, err := c.exec(node).Run(context.Background(), c.set, "events2", "--now", fres)
	require.NoError(c.t, err)
	return string(out)
}

// up creates metadata and brings both nodes up; site-a is forced Primary
// and the initial full sync completes.
func (c *fileCluster) upSynced() {
	c.t.Helper()
	for _, n := range []string{"site-a", "site-b"} {
		c.must(n, "create-md", "--force", "--max-peers=1", fres)
		c.must(n, "up", fres)
	}
	c.must("site-a", "primary", "--force", fres)
	c.waitUpToDate()
}

// waitUpToDate waits until site-b, the peer of every scenario, is UpToDate.
func (c *fileCluster) waitUpToDate() {
	c.t.Helper()
	c.waitFor("site-b", "UpToDate and in sync", func(st drbd.ResourceStatus) bool {
		return st.Devices[0].DiskState == "UpToDate" && peerPD(st).ReplicationState == "Established" && peerPD(st).OutOfSyncBytes == 0
	})
}

func (c *fileCluster) waitFor(node, what string, cond func(drbd.ResourceStatus) bool) drbd.ResourceStatus {
	c.t.Helper()
	var last drbd.ResourceStatus
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if last = c.status(node); cond(last) {
			return last
		}
	}
	c.t.Fatalf("timed out waiting for %s on %s; last %+v", what, node, last)
	return last
}

// dataArea is the part of node's backing file the device exposes.
func (c *fileCluster) dataArea(node string) []byte {
	c.t.Helper()
	size, err := c.fabric.DeviceSize(node, fminor)
	require.NoError(c.t, err)
	f, err := os.Open(c.disk[node])
	require.NoError(c.t, err)
	defer f.Close()
	buf := make([]byte, size)
	_, err = f.ReadAt(buf, 0)
	require.NoError(c.t, err)
	return buf
}

func (c *fileCluster) requireSame(msg string) {
	c.t.Helper()
	a, b := c.dataArea("site-a"), c.dataArea("site-b")
	if !bytes.Equal(a, b) {
		c.t.Fatalf("%s: data areas differ first at byte %d", msg, firstDiff(a, b))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func pattern(seed byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = seed ^ byte(i*7) ^ byte(i>>9)
	}
	return out
}

func readFileAt(t *testing.T, path string, off int64, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, n)
	_, err = f.ReadAt(buf, off)
	require.NoError(t, err)
	return buf
}

func writeFileAt(t *testing.T, path string, off int64, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt(data, off)
	require.NoError(t, err)
}

// TestInternalMetadataAtEndAndDeviceSize: create-md overwrites the end of
// the image with metadata; the device exposes only the data area below it.
func TestInternalMetadataAtEndAndDeviceSize(t *testing.T) {
	c := newFileCluster(t, fileOpts{})
	junk := bytes.Repeat([]byte{0xAB}, 64<<10)
	writeFileAt(t, c.disk["site-a"], 8<<20-int64(len(junk)), junk)
	c.must("site-a", "create-md", "--force", "--max-peers=1", fres)
	c.must("site-a", "up", fres)
	size, err := c.fabric.DeviceSize("site-a", fminor)
	require.NoError(t, err)
	// drbdmeta: md at 8 MiB-4 KiB, AL 32 KiB below, 4 KiB of bitmap below that.
	assert.Equal(t, int64(8<<20-4096-32768-4096), size)
	assert.Equal(t, uint64(size/1024), c.status("site-a").Devices[0].SizeKiB, "status size is the device's")
	tail := readFileAt(t, c.disk["site-a"], size, int(8<<20-size))
	assert.False(t, bytes.Contains(tail, []byte{0xAB, 0xAB, 0xAB, 0xAB}), "the metadata area was overwritten")
	assert.Contains(t, string(tail), "DRBDSIM", "the superblock is at md_offset")
	c.must("site-a", "primary", "--force", fres)
	require.ErrorIs(t, c.fabric.WriteDevice("site-a", fminor, size-100, make([]byte, 200)), drbdsim.ErrIO, "beyond the device")
	require.NoError(t, c.fabric.WriteDevice("site-a", fminor, size-100, make([]byte, 100)))
}

// TestExternalMetadata: the metadata goes to the meta file, the device is
// the whole backing file, and the backing file's bytes are left alone.
func TestExternalMetadata(t *testing.T) {
	c := newFileCluster(t, fileOpts{external: true})
	junk := bytes.Repeat([]byte{0xCD}, 4096)
	writeFileAt(t, c.disk["site-a"], 8<<20-4096, junk)
	c.must("site-a", "create-md", "--force", fres)
	c.must("site-a", "up", fres)
	size, err := c.fabric.DeviceSize("site-a", fminor)
	require.NoError(t, err)
	assert.Equal(t, int64(8<<20), size)
	assert.Equal(t, junk, readFileAt(t, c.disk["site-a"], 8<<20-4096, 4096))
	assert.Contains(t, string(readFileAt(t, c.meta["site-a"], 0, 64)), "DRBDSIM")

	// A meta device whose bitmap does not cover the backing device: the
	// kernel refuses the attach.
	c.must("site-b", "create-md", "--force", "--max-peers=1", fres)
	require.NoError(t, os.Truncate(c.disk["site-b"], 64<<30))
	err = c.drbdadm("site-b", "up", fres)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(112) Meta device too small.")
	require.NoError(t, os.Truncate(c.disk["site-b"], 8<<20))

	// A meta device below drbdmeta's 68 KiB minimum is refused.
	require.NoError(t, os.Truncate(c.meta["site-b"], 32<<10))
	err = c.drbdadm("site-b", "create-md", "--force", fres)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "That's not enough")
}

// TestExtFilesystemRefusedByCreateMD: drbdadm create-md on an image holding
// an ext4 fs reaching into the metadata area fails with drbdmeta's exit 40.
func TestExtFilesystemRefusedByCreateMD(t *testing.T) {
	c := newFileCluster(t, fileOpts{})
	mkfs(t, c.disk["site-a"])
	before, err := os.ReadFile(c.disk["site-a"])
	require.NoError(t, err)
	err = c.drbdadm("site-a", "create-md", "--force", fres)
	var ee *drbd.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 40, ee.ExitCode)
	assert.Contains(t, ee.Stderr, "Device size would be truncated")
	after, err := os.ReadFile(c.disk["site-a"])
	require.NoError(t, err)
	assert.True(t, bytes.Equal(before, after), "refused create-md left the image alone")
	require.Error(t, c.drbdadm("site-a", "up", fres), "no metadata was written")
}

func mkfs(t *testing.T, img string) {
	t.Helper()
	// An ext2 superblock by hand (what drbdmeta reads): magic, blocks, log size.
	sb := make([]byte, 1024)
	sb[0x38], sb[0x39] = 0x53, 0xEF
	blocks := uint32(8 << 20 / 4096)
	sb[0x04], sb[0x05], sb[0x06], sb[0x07] = byte(blocks), byte(blocks>>8), byte(blocks>>16), byte(blocks>>24)
	sb[0x18] = 2 // 4 KiB blocks
	writeFileAt(t, img, 1024, sb)
}

// TestProtocolCReplicatesBytesAndResyncsBitmap: the initial full sync copies
// the Primary's bytes; protocol C writes reach the peer's file before
// WriteDevice returns; writes while cut off go to the bitmap and resync
// after the reconnect, counters agreeing with the bitmap.
func TestProtocolCReplicatesBytesAndResyncsBitmap(t *testing.T) {
	for _, binaries := range []bool{false, true} {
		t.Run(fmt.Sprintf("binaries=%t", binaries), func(t *testing.T) {
			c := newFileCluster(t, fileOpts{binaries: binaries})
			writeFileAt(t, c.disk["site-a"], 4096*10, pattern(1, 4096*3)) // before create-md: data to sync
			c.upSynced()
			c.requireSame("after the initial sync")

			require.NoError(t, c.fabric.WriteDevice("site-a", fminor, 12345, pattern(2, 10000)))
			assert.Equal(t, pattern(2, 10000), readFileAt(t, c.disk["site-b"], 12345, 10000), "protocol C: on the peer at once")
			got, err := c.fabric.ReadDevice("site-a", fminor, 12345, 10000)
			require.NoError(t, err)
			assert.Equal(t, pattern(2, 10000), got)

			require.NoError(t, c.fabric.Disconnect(fres))
			require.NoError(t, c.fabric.WriteDevice("site-a", fminor, 1<<20, pattern(3, 5000))) // 2 blocks
			require.NoError(t, c.fabric.WriteDevice("site-a", fminor, 3<<20, pattern(4, 4096))) // 1 block
			require.NoError(t, c.fabric.WriteDevice("site-a", fminor, 3<<20, pattern(5, 100)))  // same block
			assert.Equal(t, uint64(3*4096), peerPD(c.status("site-a")).OutOfSyncBytes, "out-of-sync is the bitmap")
			assert.NotEqual(t, pattern(3, 5000), readFileAt(t, c.disk["site-b"], 1<<20, 5000))
			require.NoError(t, c.fabric.Connect(fres))
			c.waitUpToDate()
			c.requireSame("after the bitmap resync")
		})
	}
}

// TestProtocolAWindowLostOnCut: protocol A writes wait in flight (ap-in-flight,
// not out of sync) until a drain; a cut turns the undelivered blocks into
// bitmap blocks that resync.
func TestProtocolAWindowLostOnCut(t *testing.T) {
	c := newFileCluster(t, fileOpts{protocol: "A"})
	c.upSynced()
	require.NoError(t, c.fabric.WriteDevice("site-a", fminor, 0, pattern(6, 8192)))
	assert.NotEqual(t, pattern(6, 8192), readFileAt(t, c.disk["site-b"], 0, 8192), "in flight, not on the peer yet")
	assert.Zero(t, peerPD(c.status("site-a")).OutOfSyncBytes, "in flight is not out of sync while connected")
	assert.Equal(t, uint64(16), inFlight(c.status("site-a")), "8 KiB in flight: 16 sectors")
	require.NoError(t, c.fabric.Drain(fres))
	assert.Equal(t, pattern(6, 8192), readFileAt(t, c.disk["site-b"], 0, 8192))
	c.requireSame("after the drain")

	require.NoError(t, c.fabric.WriteDevice("site-a", fminor, 1<<20, pattern(7, 4096)))
	require.NoError(t, c.fabric.Disconnect(fres))
	assert.NotEqual(t, pattern(7, 4096), readFileAt(t, c.disk["site-b"], 1<<20, 4096), "the peer never got it")
	assert.Equal(t, uint64(4096), peerPD(c.status("site-a")).OutOfSyncBytes)
	require.NoError(t, c.fabric.Connect(fres))
	c.waitUpToDate()
	c.requireSame("after the resync of the lost window")
}

// TestDirectWritesInvisible: a write straight to a backing file is in no
// bitmap and never sent.
func TestDirectWritesInvisible(t *testing.T) {
	c := newFileCluster(t, fileOpts{})
	c.upSynced()
	writeFileAt(t, c.disk["site-a"], 4096, pattern(8, 4096))
	require.NoError(t, c.fabric.Disconnect(fres))
	require.NoError(t, c.fabric.Connect(fres))
	c.waitUpToDate()
	assert.Equal(t, uint64(0), peerPD(c.status("site-a")).OutOfSyncBytes)
	assert.NotEqual(t, pattern(8, 4096), readFileAt(t, c.disk["site-b"], 4096, 4096))
}

// TestResyncProgressesInOffsetOrder: a full sync walks the device upwards at
// the sync rate; a block written straight to the source's file after the
// resync passed it is not sent, one ahead of it is. WriteDevice during the
// resync reaches the SyncTarget.
func TestResyncProgressesInOffsetOrder(t *testing.T) {
	c := newFileCluster(t, fileOpts{size: 16 << 20})
	require.NoError(t, c.fabric.SetSyncRate(2<<10)) // 2 MiB/s: ~8s for 16 MiB
	for _, n := range []string{"site-a", "site-b"} {
		c.must(n, "create-md", "--force", fres)
		c.must(n, "up", fres)
	}
	c.must("site-a", "primary", "--force", fres)
	size, err := c.fabric.DeviceSize("site-a", fminor)
	require.NoError(t, err)
	st := c.waitFor("site-a", "resync under way", func(st drbd.ResourceStatus) bool {
		pd := peerPD(st)
		return pd.ReplicationState == "SyncSource" && pd.PercentInSync > 2
	})
	require.Less(t, peerPD(st).PercentInSync, 80.0, "too fast to observe")
	writeFileAt(t, c.disk["site-a"], 0, pattern(9, 4096))          // passed
	writeFileAt(t, c.disk["site-a"], size-4096, pattern(10, 4096)) // ahead
	require.NoError(t, c.fabric.WriteDevice("site-a", fminor, size/2, pattern(11, 4096)))
	assert.Equal(t, pattern(11, 4096), readFileAt(t, c.disk["site-b"], size/2, 4096), "mirrored to the SyncTarget")
	require.NoError(t, c.fabric.SetSyncRate(1<<20))
	c.waitUpToDate()
	assert.NotEqual(t, pattern(9, 4096), readFileAt(t, c.disk["site-b"], 0, 4096), "written behind the resync: never sent")
	assert.Equal(t, pattern(10, 4096), readFileAt(t, c.disk["site-b"], size-4096, 4096), "ahead of the resync: copied")
}

// TestSparseFullSync: a full sync of a sparse 1 GiB volume copies its data
// extents and leaves the target sparse.
func TestSparseFullSync(t *testing.T) {
	c := newFileCluster(t, fileOpts{size: 1 << 30})
	writeFileAt(t, c.disk["site-a"], 300<<20, pattern(12, 8192))
	// The target has stale data where the source has a hole.
	writeFileAt(t, c.disk["site-b"], 500<<20, pattern(13, 8192))
	start := time.Now()
	c.upSynced()
	assert.Less(t, time.Since(start), 8*time.Second)
	assert.Equal(t, pattern(12, 8192), readFileAt(t, c.disk["site-b"], 300<<20, 8192))
	assert.Equal(t, make([]byte, 8192), readFileAt(t, c.disk["site-b"], 500<<20, 8192), "holes of the source are zeros on the target")
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(c.disk["site-b"], &st))
	assert.Less(t, st.Blocks*512, int64(4<<20), "the target stays sparse")
}

// TestReadDevice: a Secondary refuses reads; a Primary whose disk is not
// UpToDate reads from its UpToDate peer.
func TestReadDevice(t *testing.T) {
	c := newFileCluster(t, fileOpts{})
	writeFileAt(t, c.disk["site-a"], 0, pattern(14, 4096))
	require.NoError(t, c.fabric.SetSyncRate(1)) // the initial sync crawls
	for _, n := range []string{"site-a", "site-b"} {
		c.must(n, "create-md", "--force", fres)
		c.must(n, "up", fres)
	}
	c.must("site-a", "primary", "--force", fres)
	_, err := c.fabric.ReadDevice("site-b", fminor, 0, 4096)
	require.ErrorIs(t, err, drbdsim.ErrIO, "Secondary")
	require.ErrorIs(t, c.fabric.WriteDevice("site-b", fminor, 0, make([]byte, 1)), drbdsim.ErrIO, "Secondary")
	c.must("site-a", "secondary", fres)
	c.must("site-b", "primary", fres) // allowed: its peer is UpToDate
	assert.Equal(t, "Inconsistent", c.status("site-b").Devices[0].DiskState)
	got, err := c.fabric.ReadDevice("site-b", fminor, 0, 4096)
	require.NoError(t, err)
	assert.Equal(t, pattern(14, 4096), got, "read from the UpToDate peer")
}

// splitBrain brings both nodes in sync, cuts the link, and has both write
// while Primary apart; site-a ends Primary, site-b as secondaryB says.
func splitBrain(t *testing.T, c *fileCluster, writeB bool) {
	c.upSynced()
	require.NoError(t, c.fabric.Disconnect(fres))
	require.NoError(t, c.fabric.WriteDevice("site-a", fminor, 0, pattern(20, 8192)))
	c.must("site-b", "primary", "--force", fres)
	if writeB {
		require.NoError(t, c.fabric.WriteDevice("site-b", fminor, 1<<20, pattern(21, 4096)))
	}
	c.must("site-b", "secondary", fres)
}

// TestSplitBrainStandAloneThenManualRecovery: both sides wrote apart; the
// reconnect finds a split brain: StandAlone on both, no resync, files
// untouched. The documented manual recovery makes the victim a SyncTarget of
// the blocks that differ, ending with the survivor's bytes.
func TestSplitBrainStandAloneThenManualRecovery(t *testing.T) {
	for _, binaries := range []bool{false, true} {
		t.Run(fmt.Sprintf("binaries=%t", binaries), func(t *testing.T) { splitBrainManual(t, binaries) })
	}
}

func splitBrainManual(t *testing.T, binaries bool) {
	c := newFileCluster(t, fileOpts{binaries: binaries})
	splitBrain(t, c, true)
	a0, b0 := c.dataArea("site-a"), c.dataArea("site-b")
	require.NoError(t, c.fabric.Connect(fres))
	time.Sleep(50 * time.Millisecond)
	for _, n := range []string{"site-a", "site-b"} {
		st := c.status(n)
		for _, conn := range st.Connections {
			assert.Equal(t, "StandAlone", conn.ConnectionState, n)
		}
		assert.Contains(t, c.events(n), "connection:StandAlone", n)
		assert.NotContains(t, c.events(n), "connection:Connected", n)
	}
	assert.Equal(t, a0, c.dataArea("site-a"), "split brain: no resync")
	assert.Equal(t, b0, c.dataArea("site-b"), "split brain: no resync")

	// Victim site-b: disconnect, secondary, connect --discard-my-data;
	// survivor site-a: connect.
	c.must("site-b", "disconnect", fres)
	c.must("site-b", "secondary", fres)
	c.must("site-b", "connect", "--discard-my-data", fres)
	c.must("site-a", "connect", fres)
	c.waitUpToDate()
	c.requireSame("after discarding the victim's data")
	assert.Equal(t, a0, c.dataArea("site-b"))
}

// TestAfterSBPolicies: the net section's policies resolve a split brain
// automatically as DRBD documents them.
func TestAfterSBPolicies(t *testing.T) {
	t.Run("0pri discard-zero-changes", func(t *testing.T) {
		c := newFileCluster(t, fileOpts{net: "after-sb-0pri discard-zero-changes;"})
		splitBrain(t, c, false) // site-b promoted apart but wrote nothing
		c.must("site-a", "secondary", fres)
		a0 := c.dataArea("site-a")
		require.NoError(t, c.fabric.Connect(fres))
		c.waitUpToDate()
		c.requireSame("zero-changes side discarded")
		assert.Equal(t, a0, c.dataArea("site-a"))
	})
	t.Run("0pri discard-zero-changes with changes on both", func(t *testing.T) {
		c := newFileCluster(t, fileOpts{net: "after-sb-0pri discard-zero-changes;"})
		splitBrain(t, c, true)
		c.must("site-a", "secondary", fres)
		require.NoError(t, c.fabric.Connect(fres))
		assert.Equal(t, "StandAlone", c.status("site-a").Connections[1].ConnectionState)
	})
	t.Run("1pri discard-secondary", func(t *testing.T) {
		c := newFileCluster(t, fileOpts{net: "after-sb-1pri discard-secondary;"})
		splitBrain(t, c, true)
		a0 := c.dataArea("site-a")
		require.NoError(t, c.fabric.Connect(fres))
		c.waitUpToDate()
		c.requireSame("the Secondary's changes discarded")
		assert.Equal(t, a0, c.dataArea("site-a"))
	})
	t.Run("1pri disconnect (default)", func(t *testing.T) {
		c := newFileCluster(t, fileOpts{})
		splitBrain(t, c, true)
		require.NoError(t, c.fabric.Connect(fres))
		assert.Equal(t, "StandAlone", c.status("site-b").Connections[0].ConnectionState)
	})
}

// TestWriteDeviceWithoutContents: a disk that is not a regular file keeps
// the counter-only behaviour: WriteDevice moves the KiB counters.
func TestWriteDeviceWithoutContents(t *testing.T) {
	c := newCluster(t, "C")
	c.primaryInSync()
	size, err := c.fabric.DeviceSize("site-a", 1000)
	require.NoError(t, err)
	assert.Equal(t, int64(100<<20), size, "the world's volume size")
	require.NoError(t, c.fabric.WriteDevice("site-a", 1000, 0, make([]byte, 64<<10)))
	assert.Equal(t, uint64(64), c.status("site-b").Devices[0].WrittenKiB, "replicated, counted")
	got, err := c.fabric.ReadDevice("site-a", 1000, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, make([]byte, 10), got)
}

// TestProtocolAWindowDeliversWholeBlocks: protocol A's writes in flight reach
// the peer a whole write at a time, however slow the link: cut mid-way, every
// 4 KiB block the peer holds is the old one or the new one, never a mix.
func TestProtocolAWindowDeliversWholeBlocks(t *testing.T) {
	c := newFileCluster(t, fileOpts{protocol: "A"})
	c.upSynced()
	require.NoError(t, c.fabric.SetDrainRate(3)) // KiB/s: less than a block per second
	const blocks = 8
	for i := range blocks {
		require.NoError(t, c.fabric.WriteDevice("site-a", fminor, int64(i)*4096, pattern(byte(20+i), 4096)))
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		sectors := inFlight(c.status("site-a"))
		if sectors < blocks*8 && sectors > 0 {
			break // some of the window delivered, some not
		}
		require.True(t, time.Now().Before(deadline), "the window never drained part way: %d sectors in flight", sectors)
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, c.fabric.Disconnect(fres))
	newBlocks := 0
	for i := range blocks {
		got := readFileAt(t, c.disk["site-b"], int64(i)*4096, 4096)
		switch {
		case bytes.Equal(got, pattern(byte(20+i), 4096)):
			newBlocks++
		case bytes.Equal(got, make([]byte, 4096)):
		default:
			t.Errorf("block %d arrived torn", i)
		}
	}
	assert.Positive(t, newBlocks, "part of the window was delivered")
	assert.Less(t, newBlocks, blocks, "and part was lost with the link")
}
