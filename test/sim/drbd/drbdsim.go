// Package drbdsim is a test fixture that simulates DRBD 9 for the agent:
// Build compiles stand-ins for drbdadm and drbdsetup, and Fabric lets a
// test cut links, inject writes and tune sync speed in the shared state
// those stand-ins read. Product code must never import it.
package drbdsim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/siterecovery/siterecovery/test/sim/drbd/internal/sim"
)

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// Build compiles cmd/drbdsim once per test binary and links it into dir
// as drbdadm and drbdsetup. Point DRBDSIM_STATE_DIR and DRBDSIM_NODE at
// the state dir and host name in the environment of the commands.
func Build(t testing.TB, dir string) (drbdadmPath, drbdsetupPath string) {
	t.Helper()
	buildOnce.Do(func() {
		tmp, err := os.MkdirTemp("", "drbdsim-build-")
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(tmp, "drbdsim")
		out, err := exec.Command("go", "build", "-o", buildBin,
			"github.com/siterecovery/siterecovery/test/sim/drbd/cmd/drbdsim").CombinedOutput()
		if err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("building drbdsim: %v", buildErr)
	}
	drbdadmPath, drbdsetupPath = filepath.Join(dir, "drbdadm"), filepath.Join(dir, "drbdsetup")
	for _, p := range []string{drbdadmPath, drbdsetupPath} {
		if err := os.Symlink(buildBin, p); err != nil && !os.IsExist(err) {
			t.Fatalf("linking %s: %v", p, err)
		}
	}
	return drbdadmPath, drbdsetupPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// UseMemory keeps the simulated world of stateDir in this process's memory, for
// tests whose every node runs through the in-process Executor: no state file,
// file lock or JSON per command. Built drbdsim binaries would not see it. The
// world is dropped when the test ends.
func UseMemory(t testing.TB, stateDir string) {
	sim.UseMemory(stateDir)
	t.Cleanup(func() { sim.Forget(stateDir) })
}

// ErrIO is wrapped by Fabric.Write when drbd would fail the I/O.
var ErrIO = sim.ErrIO

// ErrNotHeld is wrapped by CloseDevice's error for a holder that does not
// hold the device.
var ErrNotHeld = sim.ErrNotHeld

// Fabric manipulates the shared simulated world in StateDir.
type Fabric struct {
	StateDir string
}

func (f *Fabric) update(fn func(w *sim.World) error) error { return sim.Update(f.StateDir, fn) }

// Disconnect cuts the network between all nodes of res (both see
// Connecting, peer disks DUnknown, and with quorum majority no quorum).
// Undelivered protocol A writes become out-of-sync blocks.
func (f *Fabric) Disconnect(res string) error {
	return f.update(func(w *sim.World) error { return w.SetPartitioned(res, true) })
}

// Connect restores the network; out-of-sync blocks then resync.
func (f *Fabric) Connect(res string) error {
	return f.update(func(w *sim.World) error { return w.SetPartitioned(res, false) })
}

// CutLinks cuts the replication network between all nodes, for every
// resource, and for those created until RestoreLinks: as Disconnect of each.
func (f *Fabric) CutLinks() error {
	return f.update(func(w *sim.World) error { w.SetLinksCut(true); return nil })
}

// RestoreLinks ends CutLinks, and any Disconnect with it.
func (f *Fabric) RestoreLinks() error {
	return f.update(func(w *sim.World) error { w.SetLinksCut(false); return nil })
}

// Write simulates kib KiB of application writes on node's volume 0.
// Protocol C replicates them at once when connected; protocol A leaves
// them in flight (the peer UpToDate, the connection's ap-in-flight
// counting them) until Drain or the drain rate delivers them. It fails with an error wrapping ErrIO
// when drbd would fail the I/O (not Primary, or no quorum); test with
// errors.Is(err, ErrIO).
func (f *Fabric) Write(res, node string, kib uint64) error {
	return f.blocking(func(w *sim.World) error { return w.Write(res, node, kib) })
}

// congestedFor is how long a write waits for room in a full protocol A send
// buffer before it fails with ErrIO; DRBD itself waits until the peer takes
// the data or the connection drops.
const congestedFor = time.Minute

// blocking runs a write, waiting while a protocol A connection's send buffer
// has no room for it, as a writer on a real DRBD device blocks.
func (f *Fabric) blocking(write func(w *sim.World) error) error {
	deadline := time.Now().Add(congestedFor)
	for {
		err := f.update(write)
		if !errors.Is(err, sim.ErrCongested) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w for %s: %w", err, congestedFor, ErrIO)
		}
		time.Sleep(sim.PollInterval / 5)
	}
}

// PowerOff cuts the power of node: all its DRBD resources stop at once,
// without flushing, and come back Secondary when brought up again (see
// World.PowerOff).
func (f *Fabric) PowerOff(node string) error {
	return f.update(func(w *sim.World) error { w.PowerOff(node); return nil })
}

// Drain delivers all protocol A lag of res now.
func (f *Fabric) Drain(res string) error {
	return f.update(func(w *sim.World) error { return w.Drain(res) })
}

// SetDrainRate makes protocol A lag drain by itself at kibPerSecond
// (0, the default, means only Drain delivers it).
func (f *Fabric) SetDrainRate(kibPerSecond uint64) error {
	return f.update(func(w *sim.World) error { w.DrainRateKiBps = kibPerSecond; return nil })
}

// SetSyncRate sets the resync speed for all resources.
func (f *Fabric) SetSyncRate(kibPerSecond uint64) error {
	return f.update(func(w *sim.World) error { w.SyncRateKiBps = kibPerSecond; return nil })
}

// SetVolumeSize sets the size reported for every volume (default 1 GiB).
func (f *Fabric) SetVolumeSize(kib uint64) error {
	return f.update(func(w *sim.World) error { w.SizeKiB = kib; return nil })
}

// MarkUpToDate declares node's data of res authoritative so peers sync
// from it, without promoting it.
func (f *Fabric) MarkUpToDate(res, node string) error {
	return f.update(func(w *sim.World) error { return w.MarkUpToDate(res, node) })
}

// NodeState is a read-only summary of one node of a resource.
type NodeState struct {
	Up, Connected, Quorum bool
	Role                  string
	Disk                  string // volume 0, as the node reports it
	OutOfSyncKiB          uint64 // towards its peers, volume 0, including lag
}

// Node returns the current state of node in res.
func (f *Fabric) Node(res, node string) (NodeState, error) {
	var st NodeState
	err := f.update(func(w *sim.World) error {
		r := w.Resources[res]
		if r == nil || r.Nodes[node] == nil {
			return os.ErrNotExist
		}
		n := r.Nodes[node]
		st = NodeState{Up: n.Up, Quorum: r.HasQuorum(n), Role: n.Role, Disk: r.DiskView(n, 0)}
		for _, c := range r.Conns(n, w.SizeKiB) {
			st.Connected = st.Connected || c.Connected
			if len(c.Peers) > 0 {
				st.OutOfSyncKiB += c.Peers[0].OOS
			}
		}
		return nil
	})
	return st, err
}

// WriteDevice writes data at off through /dev/drbd<minor> on node. Refused
// with an error wrapping ErrIO when DRBD would fail the I/O: the device is not
// up, the node is not Primary, it has no quorum with on-no-quorum io-error, or
// off+len exceeds the device size. On a volume whose disk is a regular file
// the bytes land in it (below the metadata) and replicate per protocol; on
// other volumes only the KiB counters move.
func (f *Fabric) WriteDevice(node string, minor int, off int64, data []byte) error {
	return f.blocking(func(w *sim.World) error { return w.WriteDevice(node, minor, off, data) })
}

// ReadDevice reads n bytes at off through /dev/drbd<minor> on node (a Secondary
// may not be read: ErrIO, as DRBD refuses opens on a Secondary; a Primary whose
// local disk is not UpToDate reads from an UpToDate peer if connected).
func (f *Fabric) ReadDevice(node string, minor int, off int64, n int) ([]byte, error) {
	var out []byte
	err := f.update(func(w *sim.World) error {
		var err error
		out, err = w.ReadDevice(node, minor, off, n)
		return err
	})
	return out, err
}

// DeviceSize is the size /dev/drbd<minor> exposes on node.
func (f *Fabric) DeviceSize(node string, minor int) (int64, error) {
	var size int64
	err := f.update(func(w *sim.World) error {
		var err error
		size, err = w.DeviceSize(node, minor)
		return err
	})
	return size, err
}

// OpenDevice / CloseDevice count an opener of /dev/drbd<minor> on node (a VM,
// a loop device). CloseDevice leaves it open for SetCloseLinger's time more.
// While open, drbdadm secondary and down fail as DRBD's do (exit 11, "(-12)
// Device is held open by someone").
func (f *Fabric) OpenDevice(node string, minor int, holder string) error {
	return f.update(func(w *sim.World) error { return w.OpenDevice(node, minor, holder) })
}

// CloseDevice ends holder's open of /dev/drbd<minor> on node.
func (f *Fabric) CloseDevice(node string, minor int, holder string) error {
	return f.update(func(w *sim.World) error { return w.CloseDevice(node, minor, holder, time.Now()) })
}

// SetCloseLinger keeps a closed device open d longer (default 0), as a
// process that exits still holds the device a moment.
func (f *Fabric) SetCloseLinger(d time.Duration) error {
	return f.update(func(w *sim.World) error { w.CloseLingerNs = int64(d); return nil })
}
