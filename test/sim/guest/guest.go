package guest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// ErrNotRunning is matched (errors.Is) by a *NotRunningError.
var ErrNotRunning = errors.New("VM is not running")

// ErrIO is matched (errors.Is) by an *IOError.
var ErrIO = errors.New("guest I/O error")

// NotRunningError is returned by Write when the VM does not run on the cluster.
type NotRunningError struct {
	Cluster string
	VM      types.NamespacedName
	Reason  string // e.g. "no VirtualMachineInstance", "VirtualMachineInstance phase Scheduling"
}

// Error says which VM does not run on which cluster, and why.
func (e *NotRunningError) Error() string {
	return fmt.Sprintf("VM %s is not running on cluster %s: %s", e.VM, e.Cluster, e.Reason)
}

// Is makes errors.Is(err, ErrNotRunning) true.
func (e *NotRunningError) Is(target error) bool { return target == ErrNotRunning }

// IOError is returned by Write when a device refused a write: the batch stopped
// there, and Acknowledged writes of it had been acknowledged before.
type IOError struct {
	Cluster      string
	VM           types.NamespacedName
	Disk         string // the VM's volume name
	Block        int64  // block index on the disk
	Acknowledged int    // writes of the batch acknowledged before the refusal
	Err          error  // the device's error; unwrapped, so errors.Is(err, drbdsim.ErrIO) holds too
}

// Error says which write was refused, after how many acknowledged ones.
func (e *IOError) Error() string {
	return fmt.Sprintf("VM %s on cluster %s: write of block %d of disk %s refused after %d acknowledged: %v",
		e.VM, e.Cluster, e.Block, e.Disk, e.Acknowledged, e.Err)
}

// Is makes errors.Is(err, ErrIO) true.
func (e *IOError) Is(target error) bool { return target == ErrIO }

// Unwrap returns the device's error.
func (e *IOError) Unwrap() error { return e.Err }

// Ack is the outcome of one Write batch.
type Ack struct {
	// Acknowledged is how many writes of the batch the devices acknowledged.
	Acknowledged int `json:"acknowledged"`
	// LastSeq is the sequence number of the VM's last acknowledged write (of
	// this batch or an earlier one; 0 if none ever was).
	LastSeq uint64 `json:"lastSeq"`
}

// Result is what Verify read back. Every block whose last acknowledged write
// is known counts once, as Intact, Lost or Corrupt; Acknowledged is their
// number, which equals the number of acknowledged writes until a disk wraps
// around and the guest overwrites blocks.
type Result struct {
	Acknowledged int       `json:"acknowledged"`
	Intact       int       `json:"intact"`
	Lost         int       `json:"lost"`
	Corrupt      int       `json:"corrupt"`
	Disks        []DiskSum `json:"disks"`
}

// DiskSum is the checksum of a disk's bytes as the VM sees them: its
// advertised size, or fewer bytes when the device is smaller.
type DiskSum struct {
	Name     string `json:"name"`     // the VM's volume name
	Checksum string `json:"checksum"` // "sha256:<hex>"
}

// String reads "lost 0, corrupt 0 of 120 acknowledged writes".
func (r Result) String() string {
	return fmt.Sprintf("lost %d, corrupt %d of %d acknowledged writes", r.Lost, r.Corrupt, r.Acknowledged)
}

// Guests keeps one log of acknowledged writes per VM, shared across clusters.
// Its methods are safe for concurrent use; calls for one VM are serialized.
type Guests struct {
	mu   sync.Mutex
	logs map[types.NamespacedName]*vmLog
	// onBlock, if set, runs inside a batch after each acknowledged block but
	// the last (OnBlock).
	onBlock func(vm types.NamespacedName, written int)
}

// New returns Guests with no writes.
func New() *Guests { return &Guests{logs: map[types.NamespacedName]*vmLog{}} }

type blockKey struct {
	disk  string
	index int64
}

// blockLog is what the guest wrote to one block.
type blockLog struct {
	last uint64              // the latest acknowledged write; 0: none
	seen map[uint64]struct{} // every write attempted, acknowledged or refused
}

type vmLog struct {
	mu      sync.Mutex
	seq     uint64           // last sequence number given to a write
	next    int              // acknowledged writes, which pick the next disk
	rounds  map[string]int64 // per disk: acknowledged writes, which pick its next block
	lastAck uint64
	blocks  map[blockKey]*blockLog
	freeze  freezeState // freeze.go
	// boot is the VMI the guest last wrote from: a new one is a new boot.
	boot types.UID
	// recordEnds holds the last sequence number of every acknowledged batch:
	// a batch is one record of the guest's application.
	recordEnds map[uint64]bool
}

func (g *Guests) log(vm types.NamespacedName) *vmLog {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.logs[vm]
	if l == nil {
		l = &vmLog{rounds: map[string]int64{}, blocks: map[blockKey]*blockLog{}, recordEnds: map[uint64]bool{}}
		g.logs[vm] = l
	}
	return l
}

// Write makes VM vm, which must run on cluster c, write blocks numbered 4 KiB
// blocks to its disks (see the package comment for which). It stops at the
// first refused write with an *IOError; Ack counts what was acknowledged
// either way. A VM that does not run on c gets a *NotRunningError.
func (g *Guests) Write(ctx context.Context, c *Cluster, vm types.NamespacedName, blocks int) (Ack, error) {
	l := g.log(vm)
	if vmi := (&kubevirtv1.VirtualMachineInstance{}); c.reader.Get(ctx, vm, vmi) == nil && vmi.Status.Phase == kubevirtv1.Running {
		l.booted(vmi.UID)
	}
	if err := l.lockThawed(ctx); err != nil {
		return Ack{}, err
	}
	defer l.mu.Unlock()
	g.mu.Lock()
	onBlock := g.onBlock
	g.mu.Unlock()
	ack := Ack{LastSeq: l.lastAck}

	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := c.reader.Get(ctx, vm, vmi); err != nil {
		if apierrors.IsNotFound(err) {
			return ack, &NotRunningError{Cluster: c.name, VM: vm, Reason: "no VirtualMachineInstance"}
		}
		return ack, fmt.Errorf("get VirtualMachineInstance %s on cluster %s: %w", vm, c.name, err)
	}
	if vmi.Status.Phase != kubevirtv1.Running {
		return ack, &NotRunningError{Cluster: c.name, VM: vm,
			Reason: fmt.Sprintf("VirtualMachineInstance phase %q", vmi.Status.Phase)}
	}
	disks, err := c.disksOf(ctx, vm, vmi)
	if err != nil {
		return ack, err
	}
	defer closeDisks(disks)

	for range blocks {
		d := disks[l.next%len(disks)]
		index := blockIndex(l.rounds[d.name], d.blocks())
		key := blockKey{disk: d.name, index: index}
		b := l.blocks[key]
		if b == nil {
			b = &blockLog{seen: map[uint64]struct{}{}}
			l.blocks[key] = b
		}
		l.seq++
		seq := l.seq
		b.seen[seq] = struct{}{}
		off := index * BlockSize
		var werr error
		if off+BlockSize > d.devLen {
			werr = fmt.Errorf("block ends at byte %d, beyond the end of %s (%d bytes; the claim advertises %d)",
				off+BlockSize, d.dev, d.devLen, d.size)
		} else {
			werr = d.dev.writeAt(off, encodeBlock(stamp{vm: vm.String(), disk: d.name, seq: seq, index: index}))
		}
		if werr != nil {
			return ack, &IOError{Cluster: c.name, VM: vm, Disk: d.name, Block: index, Acknowledged: ack.Acknowledged, Err: werr}
		}
		b.last = seq
		l.lastAck = seq
		l.next++
		l.rounds[d.name]++
		ack.Acknowledged++
		ack.LastSeq = seq
		if onBlock != nil && ack.Acknowledged < blocks {
			onBlock(vm, ack.Acknowledged)
		}
	}
	l.recordEnds[ack.LastSeq] = true
	return ack, nil
}

// disksOf opens the disks of a running VM: those of its VMI, else of its
// VirtualMachine's template.
func (c *Cluster) disksOf(ctx context.Context, vm types.NamespacedName, vmi *kubevirtv1.VirtualMachineInstance) ([]*disk, error) {
	vols := vmi.Spec.Volumes
	if len(volumes(vols)) == 0 {
		t, err := c.templateVolumes(ctx, vm)
		if err != nil {
			return nil, err
		}
		vols = t
	}
	disks, err := c.openDisks(ctx, vm.Namespace, vols, vmi.Status.NodeName)
	if err != nil {
		return nil, fmt.Errorf("VM %s: %w", vm, err)
	}
	return disks, nil
}

func (c *Cluster) templateVolumes(ctx context.Context, vm types.NamespacedName) ([]kubevirtv1.Volume, error) {
	v := &kubevirtv1.VirtualMachine{}
	if err := c.reader.Get(ctx, vm, v); err != nil {
		return nil, fmt.Errorf("get VirtualMachine %s on cluster %s: %w", vm, c.name, err)
	}
	if v.Spec.Template == nil {
		return nil, nil
	}
	return v.Spec.Template.Spec.Volumes, nil
}

// Verify reads back, on cluster c, every block of VM vm whose last
// acknowledged write is known: through the devices the VM uses if it runs on
// c, else through those it would boot from (its template's volumes). A block
// is intact when it holds its last acknowledged write (or a later write the
// device refused, which a device may keep), lost when it holds an older write
// of the VM or zeros, and corrupt otherwise, including a block beyond the end
// of a device smaller than its claim. A disk the VM no longer has counts its
// blocks lost. An error is returned only when the disks cannot be resolved or
// read.
func (g *Guests) Verify(ctx context.Context, c *Cluster, vm types.NamespacedName) (Result, error) {
	l := g.log(vm)
	l.mu.Lock()
	defer l.mu.Unlock()

	var disks []*disk
	vmi := &kubevirtv1.VirtualMachineInstance{}
	err := c.reader.Get(ctx, vm, vmi)
	switch {
	case err == nil && vmi.Status.Phase == kubevirtv1.Running:
		disks, err = c.disksOf(ctx, vm, vmi)
	case err == nil || apierrors.IsNotFound(err):
		var vols []kubevirtv1.Volume
		if vols, err = c.templateVolumes(ctx, vm); err == nil {
			if disks, err = c.openDisks(ctx, vm.Namespace, vols, ""); err != nil {
				err = fmt.Errorf("VM %s: %w", vm, err)
			}
		}
	default:
		err = fmt.Errorf("get VirtualMachineInstance %s on cluster %s: %w", vm, c.name, err)
	}
	if err != nil {
		return Result{}, err
	}
	defer closeDisks(disks)

	byName := map[string]*disk{}
	var res Result
	for _, d := range disks {
		byName[d.name] = d
		sum, err := checksum(d)
		if err != nil {
			return Result{}, fmt.Errorf("VM %s on cluster %s: read disk %s (%s): %w", vm, c.name, d.name, d.dev, err)
		}
		res.Disks = append(res.Disks, DiskSum{Name: d.name, Checksum: sum})
	}
	for key, b := range l.blocks {
		if b.last == 0 {
			continue
		}
		res.Acknowledged++
		d := byName[key.disk]
		if d == nil {
			res.Lost++
			continue
		}
		off := key.index * BlockSize
		if key.index >= d.blocks() || off+BlockSize > d.devLen {
			res.Corrupt++
			continue
		}
		data, err := d.dev.readAt(off, BlockSize)
		if err != nil {
			return Result{}, fmt.Errorf("VM %s on cluster %s: read block %d of disk %s (%s): %w", vm, c.name, key.index, d.name, d.dev, err)
		}
		switch classify(data, vm.String(), key, b) {
		case intact:
			res.Intact++
		case lost:
			res.Lost++
		default:
			res.Corrupt++
		}
	}
	return res, nil
}

type verdict int

const (
	intact verdict = iota
	lost
	corrupt
)

func classify(data []byte, vm string, key blockKey, b *blockLog) verdict {
	if len(data) == BlockSize && isZero(data) {
		return lost
	}
	s, ok := decodeBlock(data)
	if !ok || s.vm != vm || s.disk != key.disk || s.index != key.index {
		return corrupt
	}
	if _, wrote := b.seen[s.seq]; !wrote {
		return corrupt
	}
	if s.seq >= b.last {
		return intact
	}
	return lost
}

// checksum hashes the disk's bytes as the VM sees them: up to its advertised
// size, or to the end of a smaller device.
func checksum(d *disk) (string, error) {
	const chunk = 1 << 20
	h := sha256.New()
	end := min(d.size, d.devLen)
	for off := int64(0); off < end; {
		n := int(min(chunk, end-off))
		b, err := d.dev.readAt(off, n)
		if err != nil {
			return "", err
		}
		h.Write(b)
		if len(b) < n {
			break
		}
		off += int64(n)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
