// Package sim is the shared core of the DRBD simulator: the on-disk
// world state shared by all simulated nodes, the config parser, and the
// drbdadm/drbdsetup command implementations. It is a test fixture only.
package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// Defaults for a fresh world; tests change them through the Fabric.
const (
	DefaultSizeKiB  = 1 << 20 // 1 GiB per volume
	DefaultSyncRate = 1 << 20 // KiB/s: a 1 GiB initial sync takes ~1s
)

// World is the whole simulated cluster, persisted as JSON in the state dir.
type World struct {
	SyncRateKiBps  uint64
	DrainRateKiBps uint64 // protocol A lag drained per second; 0 = only Fabric.Drain
	SizeKiB        uint64 // size of every volume
	LastTick       time.Time
	// LinksCut is set by Fabric.CutLinks: the replication network between
	// the nodes is down, for every resource, those created since too.
	LinksCut  bool
	Resources map[string]*Res
	// CloseLingerNs keeps a closed /dev/drbdN open this much longer
	// (Fabric.SetCloseLinger).
	CloseLingerNs int64 `json:",omitempty"`

	// onHost lists, sorted, the names of the resources each host has: an
	// event stream reads only its own node's, after every change of any node.
	// Built on first use; a world kept in memory drops it with every change.
	onHost map[string][]string

	// For the event streams of a world kept in memory (memory.go), which
	// render again only what changed: touched names the resources the
	// running update changed (nil: it may have changed any), changedAt the
	// version of each resource's last change, allChangedAt that of the last
	// change that may have touched any, and version the current one.
	touched      map[string]bool
	changedAt    map[string]uint64
	allChangedAt uint64
	version      uint64
}

// touch records that the running update changes resource name alone (or
// with the others it touches); an update that touches none may change any.
func (w *World) touch(name string) {
	if w.touched == nil {
		w.touched = map[string]bool{}
	}
	w.touched[name] = true
}

// changed records the version of the update that just ran.
func (w *World) changed(version uint64) {
	w.version = version
	if w.touched == nil {
		w.allChangedAt = version
		return
	}
	if w.changedAt == nil {
		w.changedAt = map[string]uint64{}
	}
	for name := range w.touched {
		w.changedAt[name] = version
	}
}

// namesOn is onHost[host], built for every host on first use.
func (w *World) namesOn(host string) []string {
	if w.onHost == nil {
		w.onHost = map[string][]string{}
		for name, r := range w.Resources {
			for h := range r.Nodes {
				w.onHost[h] = append(w.onHost[h], name)
			}
		}
		for _, names := range w.onHost {
			sort.Strings(names)
		}
	}
	return w.onHost[host]
}

// Res is one resource as seen by all nodes.
type Res struct {
	Name     string
	Protocol string
	// SndBufKiB is the net section's sndbuf-size (0: not set).
	SndBufKiB   uint64      `json:",omitempty"`
	Partitioned bool        // set by Fabric.Disconnect
	Volumes     map[int]Vol // by volume number
	Nodes       map[string]*Node
	Pairs       map[string]*Pair // key: pairKey(a, b)
	// AfterSB holds the net section's after-sb-0pri, -1pri and -2pri
	// policies ("" is DRBD's default, disconnect).
	AfterSB [3]string `json:",omitempty"`
}

// Vol is a volume definition from the config.
type Vol struct {
	Minor int
	Disk  string
	Meta  string `json:",omitempty"` // meta-disk path; "" or "internal" for internal
}

// Node is one host's side of a resource.
type Node struct {
	Host     string
	NodeID   int
	Addr     string // e.g. ipv4:10.0.0.1:7000
	MD       bool   // create-md done
	Up       bool
	Departed bool // went down gracefully: does not count for quorum
	// Configured holds the peers of this node's resource file as last applied
	// (up or adjust); nil means every node of the resource. A peer left out
	// is neither connected nor counted for quorum, as DRBD drops a connection
	// that the configuration no longer has. Not omitted when empty: a file
	// with no peer left (every one fenced) must not read back as nil.
	Configured map[string]bool
	Role       string
	// Quorum and OnNoQuorum are the options of this node's resource file.
	Quorum     string
	OnNoQuorum string
	Disk       map[int]string // persistent local disk state per volume
	Read       map[int]uint64
	Written    map[int]uint64
	Sent       map[string]uint64 // KiB to peer host
	Recv       map[string]uint64 // KiB from peer host
	// Devs holds each volume's device after create-md (data.go).
	Devs map[int]*Dev `json:",omitempty"`
	// StandAlone names the peers this node does not try to connect to: after
	// an unresolved split brain, or `drbdadm disconnect` (all of them).
	StandAlone map[string]bool `json:",omitempty"`
	// DiscardMyData is `drbdadm connect --discard-my-data`: this node is the
	// split brain victim at its next handshake.
	DiscardMyData bool `json:",omitempty"`
	// Auth identifies the peer authentication of the node's applied file
	// (authKey): "" without cram-hmac-alg. A digest, so that the state file
	// holds no secret.
	Auth string `json:",omitempty"`
}

// Pair is the replication relationship between two nodes.
type Pair struct {
	OOS    map[int]uint64 // KiB that differ
	Total  map[int]uint64 // KiB to resync when the current sync started
	Lag    map[int]uint64 // protocol A KiB acknowledged locally but not yet on the peer
	Source string         // host holding the good copy of the OOS blocks
	Link   bool           `json:",omitempty"` // connected at the last settle
	// Credit is resync budget (bytes) not yet spent per volume with
	// contents: copies happen in steps of at least minResyncStep, not on
	// every command, which keeps many volumes in resync cheap.
	Credit map[int]int64 `json:",omitempty"`
	// DrainCredit is protocol A drain budget (bytes) short of a whole
	// block, per volume (drainBudget).
	DrainCredit map[int]int64 `json:",omitempty"`
}

func newWorld() *World {
	return &World{SyncRateKiBps: DefaultSyncRate, SizeKiB: DefaultSizeKiB, Resources: map[string]*Res{}}
}

// Update locks the state dir, loads the world, advances time-driven
// progress, runs fn, and saves the result. flock makes concurrent
// simulated nodes (separate processes) safe.
func Update(dir string, fn func(w *World) error) error { return update(dir, fn, true) }

// update is Update; notify wakes the in-process event streams. A stream's own
// snapshot does not notify, or streams would wake each other forever.
func update(dir string, fn func(w *World) error, notify bool) error {
	if dir == "" {
		return errors.New("DRBDSIM_STATE_DIR is not set")
	}
	if m, ok := memoryWorld(dir); ok {
		return m.update(fn, notify)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file releases the lock anyway

	w := newWorld()
	path := filepath.Join(dir, "state.json")
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, w); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	lastTick := w.LastTick
	w.advance(time.Now())
	ferr := fn(w)
	w.settle()
	// A call that changed nothing but the clock (a status query, an idle event
	// stream) leaves the file alone: streams then see no change to re-read, and
	// time not yet accounted for is simply accounted for by the next writer.
	advanced := w.LastTick
	w.LastTick = lastTick
	out, err := json.Marshal(w)
	if err != nil {
		return err
	}
	if data != nil && bytes.Equal(out, data) {
		return ferr
	}
	w.LastTick = advanced
	if out, err = json.Marshal(w); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if notify {
		changes.notify()
	}
	return ferr
}

func pairKey(a, b string) string {
	if a > b {
		a, b = b, a
	}
	return a + "|" + b
}

// Pair returns (creating) the pair of hosts a and b.
func (r *Res) Pair(a, b string) *Pair {
	if r.Pairs == nil {
		r.Pairs = map[string]*Pair{}
	}
	k := pairKey(a, b)
	p := r.Pairs[k]
	if p == nil {
		p = &Pair{OOS: map[int]uint64{}, Total: map[int]uint64{}, Lag: map[int]uint64{}}
		r.Pairs[k] = p
	}
	return p
}

// Connected reports whether two nodes of the resource have a live link.
func (r *Res) Connected(a, b *Node) bool {
	return r.reachable(a, b) && (a.Auth == b.Auth || r.linked(a, b))
}

// reachable reports whether a and b would try to connect: both up, not cut
// apart, each configured with the other and neither StandAlone.
func (r *Res) reachable(a, b *Node) bool {
	return a != b && a.Up && b.Up && !r.Partitioned && a.configures(b) && b.configures(a) &&
		!a.StandAlone[b.Host] && !b.StandAlone[a.Host]
}

// configures reports whether n's applied configuration has a connection to m.
func (n *Node) configures(m *Node) bool { return n.Configured == nil || n.Configured[m.Host] }

// Peers returns the other nodes of the resource.
func (r *Res) Peers(n *Node) []*Node {
	var out []*Node
	for _, m := range r.Nodes {
		if m != n {
			out = append(out, m)
		}
	}
	return out
}

// HasQuorum implements DRBD's majority rule; nodes that left gracefully
// (drbdadm down) do not count, like DRBD 9's "outdated peer" handling.
func (r *Res) HasQuorum(n *Node) bool {
	if n.Quorum != "majority" {
		return true
	}
	voters, votes := 0, 0
	for _, m := range r.Nodes {
		if m != n && (m.Departed && !m.Up || !n.configures(m)) {
			continue
		}
		voters++
		if m == n || r.Connected(n, m) {
			votes++
		}
	}
	return 2*votes > voters
}
