package sim

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Dev is one node's DRBD device of one volume after create-md: where its
// data and metadata are, its generation identifiers, its bitmaps towards
// each peer and its openers.
type Dev struct {
	Backing string // the volume's disk
	Meta    string // external meta-disk, "" for internal
	// File is set when the backing disk is a regular file: the simulator
	// then keeps the volume's contents in it. Otherwise only KiB counters.
	File     bool
	Layout   Layout
	MaxPeers int `json:",omitempty"`
	// Generation identifiers as DRBD 9 keeps them per device (drbd kernel
	// drbd_main.c drbd_uuid_new_current, drbd_receiver.c drbd_uuid_compare):
	// the current UUID, a bitmap UUID per peer (the current UUID when the
	// peer was last in sync, 0 when it is), and two history UUIDs.
	Current    uint64
	BitmapUUID map[string]uint64 `json:",omitempty"`
	History    [2]uint64
	// NewCur is DRBD's NEW_CUR_UUID flag: a Primary that lost a peer starts
	// a new current UUID with its next write (drbd_req.c ensure_current_uuid).
	NewCur bool `json:",omitempty"`
	// BM holds, per peer host, the blocks written here that the peer may
	// lack; Window the protocol A blocks sent but not yet on the peer.
	BM     map[string]Blocks `json:",omitempty"`
	Window map[string]Blocks `json:",omitempty"`
	// Openers holds who has /dev/drbdN open: 0 while open, else the unix
	// nanoseconds until which a closed holder still lingers.
	Openers map[string]int64 `json:",omitempty"`
}

func newUUID() uint64 { return rand.Uint64()&^1 | 0x100 }

// isOpen reports whether anyone holds the device open at now.
func (d *Dev) isOpen(now time.Time) bool {
	for _, until := range d.Openers {
		if until == 0 || until > now.UnixNano() {
			return true
		}
	}
	return false
}

// anyOpen reports whether any device of n is held open.
func (n *Node) anyOpen(now time.Time) bool {
	for _, d := range n.Devs {
		if d != nil && d.isOpen(now) {
			return true
		}
	}
	return false
}

// dev returns n's device of volume v, nil before create-md.
func (n *Node) dev(v int) *Dev {
	if n.Devs == nil {
		return nil
	}
	return n.Devs[v]
}

// byteMode reports whether volume v of a and b both hold contents, so that
// replication and resync copy bytes rather than count KiB.
func byteMode(a, b *Node, v int) bool {
	da, db := a.dev(v), b.dev(v)
	return da != nil && db != nil && da.File && db.File
}

// rotateUUID starts a new current UUID on n's device (drbd_uuid_new_current):
// for each peer not connected the old current becomes its bitmap UUID (the
// point its bitmap counts from) unless it has one already; connected peers
// in sync take the new current UUID too.
func (r *Res) rotateUUID(n *Node, v int) {
	d := n.dev(v)
	if d == nil {
		return
	}
	old := d.Current
	d.History = [2]uint64{old, d.History[0]}
	d.Current = newUUID()
	d.NewCur = false
	for _, m := range r.Peers(n) {
		if r.Connected(n, m) {
			if md := m.dev(v); md != nil && m.Disk[v] == "UpToDate" && len(d.BM[m.Host]) == 0 && r.Pair(n.Host, m.Host).OOS[v] == 0 {
				md.History = [2]uint64{md.Current, md.History[0]}
				md.Current = d.Current
			}
			continue
		}
		if d.BitmapUUID == nil {
			d.BitmapUUID = map[string]uint64{}
		}
		if d.BitmapUUID[m.Host] == 0 {
			d.BitmapUUID[m.Host] = old
		}
	}
}

// markOOS records blocks [s, e) of n's volume v as out of sync towards m.
func (d *Dev) markOOS(peer string, s, e int64) {
	if d.BM == nil {
		d.BM = map[string]Blocks{}
	}
	d.BM = setBlocks(d.BM, peer, d.BM[peer].Add(s, e))
}

// syncCounters makes the pair's KiB counters of a byte-mode volume what its
// bitmaps and windows say: what the product reads agrees with the bytes.
func (r *Res) syncCounters(a, b *Node, v int) {
	if !byteMode(a, b, v) {
		return
	}
	p := r.Pair(a.Host, b.Host)
	da, db := a.dev(v), b.dev(v)
	p.OOS[v] = uint64(da.BM[b.Host].Union(db.BM[a.Host]).Bytes() / 1024)
	p.Lag[v] = uint64(da.Window[b.Host].Union(db.Window[a.Host]).Bytes() / 1024)
	if p.OOS[v] == 0 {
		p.Total[v] = 0
	}
}

// copyBlocks copies the blocks of set from src's backing file to dst's.
// Holes of src (SEEK_DATA/SEEK_HOLE) are punched into dst rather than
// copied, so a sparse volume costs only its data.
func copyBlocks(src, dst *Dev, set Blocks) error {
	if len(set) == 0 {
		return nil
	}
	sf, err := os.Open(src.Backing)
	if err != nil {
		return err
	}
	defer sf.Close()
	df, err := os.OpenFile(dst.Backing, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer df.Close()
	buf := make([]byte, 1<<20)
	for _, r := range set {
		for pos := r[0]; pos < r[1]; {
			data, err := unix.Seek(int(sf.Fd()), pos, unix.SEEK_DATA)
			if err != nil || data > r[1] {
				data = r[1] // a hole to the end (ENXIO) or past the range
			}
			if data > pos {
				if err := zeroRange(df, pos, data-pos); err != nil {
					return err
				}
				pos = data
				continue
			}
			hole, err := unix.Seek(int(sf.Fd()), pos, unix.SEEK_HOLE)
			if err != nil || hole > r[1] {
				hole = r[1]
			}
			for pos < hole {
				n := min(int64(len(buf)), hole-pos)
				if _, err := sf.ReadAt(buf[:n], pos); err != nil && !errors.Is(err, io.EOF) {
					return err
				}
				if _, err := df.WriteAt(buf[:n], pos); err != nil {
					return err
				}
				pos += n
			}
		}
	}
	return nil
}

// zeroRange makes [off, off+n) of f read as zeros: a punched hole, or
// written zeros where the file system cannot punch.
func zeroRange(f *os.File, off, n int64) error {
	if unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n) == nil {
		return nil
	}
	zeros := make([]byte, min(n, 1<<20))
	for n > 0 {
		k := min(n, int64(len(zeros)))
		if _, err := f.WriteAt(zeros[:k], off); err != nil {
			return err
		}
		off, n = off+k, n-k
	}
	return nil
}

// findMinor is the resource, node and volume of /dev/drbd<minor> on host.
//
// A minor is the device of the resource that is up with it on the node: the
// kernel creates /dev/drbd<minor> with the resource and removes it with
// `down` (drbd_nl.c, drbd_adm_new_minor and adm_del_minor), so a resource that is down with the same minor in its file (one
// torn down, whose minor was given to another) does not own it. Only when
// none is up does a down one answer, with its "not up" error.
func (w *World) findMinor(host string, minor int) (*Res, *Node, int, error) {
	var down *Res
	var downNode *Node
	downVol := 0
	for _, name := range sortedNames(w) {
		r := w.Resources[name]
		n := r.Nodes[host]
		if n == nil {
			continue
		}
		for v, vol := range r.Volumes {
			if vol.Minor != minor {
				continue
			}
			if n.Up {
				return r, n, v, nil
			}
			if down == nil {
				down, downNode, downVol = r, n, v
			}
		}
	}
	if down != nil {
		return down, downNode, downVol, nil
	}
	return nil, nil, 0, fmt.Errorf("drbdsim: /dev/drbd%d on %s: %w", minor, host, os.ErrNotExist)
}

// DeviceSize is the size /dev/drbd<minor> exposes on host.
func (w *World) DeviceSize(host string, minor int) (int64, error) {
	r, n, v, err := w.findMinor(host, minor)
	if err != nil {
		return 0, err
	}
	return r.devSize(n, v, w.SizeKiB), nil
}

// devSize is the device's size in bytes: the data area of a volume with
// contents, the world's volume size otherwise.
func (r *Res) devSize(n *Node, v int, sizeKiB uint64) int64 {
	if d := n.dev(v); d != nil && d.File {
		return d.Layout.DataSize
	}
	return int64(sizeKiB) * 1024
}

// sizeKiB is devSize in KiB, as status and events2 print it.
func (r *Res) sizeKiB(n *Node, v int, sizeKiB uint64) uint64 {
	return uint64(r.devSize(n, v, sizeKiB) / 1024)
}

// ioCheck is what DRBD refuses before an I/O on /dev/drbd<minor>: a device
// not up or not Primary (drbd kernel drbd_main.c drbd_open: a Secondary is not
// opened for I/O), no quorum with on-no-quorum io-error (drbd_req.c, and the
// DRBD 9 user's guide on quorum), and I/O past the device's end.
func (w *World) ioCheck(host string, minor int, off, n int64) (*Res, *Node, int, error) {
	r, nd, v, err := w.findMinor(host, minor)
	if err != nil {
		return nil, nil, 0, err
	}
	switch {
	case !nd.Up:
		return nil, nil, 0, fmt.Errorf("drbdsim: /dev/drbd%d on %s is not up: %w", minor, host, ErrIO)
	case nd.Role != "Primary":
		return nil, nil, 0, fmt.Errorf("drbdsim: %s on %s is not Primary (Secondary refuses I/O): %w", r.Name, host, ErrIO)
	case !r.HasQuorum(nd):
		return nil, nil, 0, fmt.Errorf("drbdsim: %s on %s has no quorum (%s): %w", r.Name, host, nd.OnNoQuorum, ErrIO)
	case off < 0 || n < 0 || off+n > r.devSize(nd, v, w.SizeKiB):
		return nil, nil, 0, fmt.Errorf("drbdsim: I/O at %d+%d beyond the end of /dev/drbd%d (%d bytes): %w",
			off, n, minor, r.devSize(nd, v, w.SizeKiB), ErrIO)
	}
	return r, nd, v, nil
}

// WriteDevice writes data at off through /dev/drbd<minor> on host: locally,
// then to each peer as the protocol and connection state say (drbd kernel
// drbd_req.c: protocol C completes a write on the peer's write ack, protocol A
// once it is sent; a peer not connected, or not UpToDate and not a SyncTarget,
// gets the blocks marked out of sync instead).
func (w *World) WriteDevice(host string, minor int, off int64, data []byte) error {
	r, n, v, err := w.ioCheck(host, minor, off, int64(len(data)))
	if err != nil {
		return err
	}
	kib := uint64((len(data) + 1023) / 1024)
	if err := r.congested(n, kib); err != nil {
		return err
	}
	w.touch(r.Name)
	d := n.dev(v)
	if d != nil && d.NewCur {
		r.rotateUUID(n, v)
	}
	if d == nil || !d.File {
		n.Written[v] += kib // no contents: counters only
		for _, m := range r.Peers(n) {
			if n.configures(m) {
				w.countWrite(r, n, m, v, kib)
			}
		}
		return nil
	}
	if err := pwrite(d.Backing, off, data); err != nil {
		return fmt.Errorf("drbdsim: local write: %w", errors.Join(err, ErrIO))
	}
	n.Written[v] += kib
	s, e := blockSpan(off, int64(len(data)))
	for _, m := range r.Peers(n) {
		if !n.configures(m) {
			continue
		}
		if !byteMode(n, m, v) {
			w.countWrite(r, n, m, v, kib)
			continue
		}
		p := r.Pair(n.Host, m.Host)
		md := m.dev(v)
		target := p.OOS[v] > 0 && p.Source == n.Host // m is our SyncTarget
		switch {
		case !r.Connected(n, m) || m.Disk[v] != "UpToDate" && !target:
			d.markOOS(m.Host, s, e) // for a later resync
		case r.Protocol == "A":
			if d.Window == nil {
				d.Window = map[string]Blocks{}
			}
			d.Window = setBlocks(d.Window, m.Host, d.Window[m.Host].Add(s, e))
			p.Source = n.Host
		default: // protocol C: on the peer before the write completes
			if err := copyBlocks(d, md, Blocks{{s, e}}); err != nil {
				return fmt.Errorf("drbdsim: replicating: %w", errors.Join(err, ErrIO))
			}
			transfer(n, m, kib)
			m.Written[v] += kib
			// Mirrored blocks are in sync now, on both bitmaps.
			d.BM = setBlocks(d.BM, m.Host, d.BM[m.Host].Remove(s, e))
			md.BM = setBlocks(md.BM, n.Host, md.BM[n.Host].Remove(s, e))
		}
		r.syncCounters(n, m, v)
	}
	return nil
}

// countWrite is the bookkeeping of kib KiB written towards one peer of a
// volume without contents: replicated, in protocol A's window, or (not
// replicated now) remembered for a resync.
func (w *World) countWrite(r *Res, n, m *Node, v int, kib uint64) {
	p := r.Pair(n.Host, m.Host)
	switch {
	case !r.Connected(n, m) || p.OOS[v] > 0 || m.Disk[v] != "UpToDate":
		if p.OOS[v] == 0 {
			p.Source = n.Host
		}
		p.OOS[v] += kib
	case r.Protocol == "A":
		p.Source = n.Host
		p.Lag[v] += kib
	default:
		transfer(n, m, kib)
		m.Written[v] += kib
	}
}

// ReadDevice reads n bytes at off through /dev/drbd<minor> on host: from the
// local disk when it is UpToDate (or the block is in sync), else from an
// UpToDate peer it is connected to (drbd kernel drbd_req.c
// drbd_may_do_local_read).
func (w *World) ReadDevice(host string, minor int, off int64, size int) ([]byte, error) {
	r, n, v, err := w.ioCheck(host, minor, off, int64(size))
	if err != nil {
		return nil, err
	}
	w.touch(r.Name)
	n.Read[v] += uint64((size + 1023) / 1024)
	buf := make([]byte, size)
	d := n.dev(v)
	if d == nil || !d.File {
		return buf, nil // no contents: zeros
	}
	from := d
	if n.Disk[v] != "UpToDate" {
		from = nil
		for _, m := range r.Peers(n) {
			if r.Connected(n, m) && m.Disk[v] == "UpToDate" && byteMode(n, m, v) {
				from = m.dev(v)
				break
			}
		}
		if from == nil {
			return nil, fmt.Errorf("drbdsim: %s on %s has no UpToDate data to read: %w", r.Name, host, ErrIO)
		}
	}
	if err := pread(from.Backing, off, buf); err != nil {
		return nil, fmt.Errorf("drbdsim: read: %w", errors.Join(err, ErrIO))
	}
	return buf, nil
}

func pwrite(path string, off int64, data []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteAt(data, off)
	return err
}

func pread(path string, off int64, buf []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.ReadAt(buf, off)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// OpenDevice counts holder as an opener of /dev/drbd<minor> on host. DRBD
// refuses opens on a Secondary (while another node is Primary, or always
// for writing); the simulator only lets an up device be opened.
func (w *World) OpenDevice(host string, minor int, holder string) error {
	r, n, v, err := w.findMinor(host, minor)
	if err != nil {
		return err
	}
	if !n.Up {
		return fmt.Errorf("drbdsim: /dev/drbd%d on %s is not up: %w", minor, host, ErrIO)
	}
	d := n.dev(v)
	if d == nil {
		return fmt.Errorf("drbdsim: /dev/drbd%d on %s has no metadata: %w", minor, host, ErrIO)
	}
	w.touch(r.Name)
	if d.Openers == nil {
		d.Openers = map[string]int64{}
	}
	d.Openers[holder] = 0
	return nil
}

// CloseDevice ends holder's open; it lingers for the world's close linger.
func (w *World) CloseDevice(host string, minor int, holder string, now time.Time) error {
	r, n, v, err := w.findMinor(host, minor)
	if err != nil {
		return err
	}
	d := n.dev(v)
	if d == nil || d.Openers == nil {
		return fmt.Errorf("drbdsim: %s does not hold /dev/drbd%d on %s: %w", holder, minor, host, ErrNotHeld)
	}
	if _, ok := d.Openers[holder]; !ok {
		return fmt.Errorf("drbdsim: %s does not hold /dev/drbd%d on %s: %w", holder, minor, host, ErrNotHeld)
	}
	w.touch(r.Name)
	if w.CloseLingerNs <= 0 {
		delete(d.Openers, holder)
		return nil
	}
	d.Openers[holder] = now.UnixNano() + w.CloseLingerNs
	return nil
}

// dropExpiredOpeners forgets closed holders whose linger ended.
func (w *World) dropExpiredOpeners(now time.Time) {
	for _, r := range w.Resources {
		for _, n := range r.Nodes {
			for _, d := range n.Devs {
				for h, until := range d.Openers {
					if until != 0 && until <= now.UnixNano() {
						delete(d.Openers, h)
					}
				}
			}
		}
	}
}

// attachCheck is what the kernel checks when drbdadm up/adjust attaches a
// volume with flex-external metadata (drbd kernel drbd_nl.c drbd_adm_attach:
// a flex meta device of at least 1 MiB, whose bitmap covers the backing
// device): ERR_MD_DISK_TOO_SMALL, "(112) Meta device too small."
func attachCheck(r *Res, n *Node) error {
	for _, v := range sortedVols(r) {
		d := n.dev(v)
		if d == nil || !d.File || d.Meta == "" {
			continue
		}
		size, _ := regularSize(d.Backing)
		metaSize, _ := regularSize(d.Meta)
		if metaSize < 1<<20 || ExternalLayout(size, metaSize, d.MaxPeers).DataSize < size {
			return fail(10, "%d: Failure: (112) Meta device too small.\nCommand 'drbdsetup attach %d %s %s flexible' terminated with exit code 10",
				r.Volumes[v].Minor, r.Volumes[v].Minor, d.Backing, d.Meta)
		}
	}
	return nil
}
