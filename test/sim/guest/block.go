package guest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
)

// BlockSize is the size of the blocks the guest writes and verifies.
const BlockSize = 4096

// magic opens every block the guest writes.
var magic = [8]byte{'S', 'R', 'G', 'U', 'E', 'S', 'T', '1'}

// Layout of a block: magic, sequence number, block index, the VM ("ns/name")
// and the disk (volume name) with 16-bit lengths, filler up to the last 32
// bytes, and a SHA-256 of everything before it.
const (
	offSeq   = 8
	offIndex = 16
	offIdent = 24
	sumStart = BlockSize - sha256.Size
)

// stamp is what a block written by the guest says about itself.
type stamp struct {
	vm, disk string
	seq      uint64
	index    int64
}

// encodeBlock returns the contents of the block s describes.
func encodeBlock(s stamp) []byte {
	b := make([]byte, BlockSize)
	copy(b, magic[:])
	binary.BigEndian.PutUint64(b[offSeq:], s.seq)
	binary.BigEndian.PutUint64(b[offIndex:], uint64(s.index))
	p := offIdent
	for _, str := range []string{s.vm, s.disk} {
		binary.BigEndian.PutUint16(b[p:], uint16(len(str)))
		p += 2 + copy(b[p+2:sumStart], str)
	}
	// Filler: an xorshift stream seeded by the write, so that two writes of a
	// block differ in every word and a torn block fails its checksum.
	x := s.seq*0x9E3779B97F4A7C15 ^ uint64(s.index) ^ 0xD1B54A32D192ED03
	for ; p+8 <= sumStart; p += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.BigEndian.PutUint64(b[p:], x)
	}
	sum := sha256.Sum256(b[:sumStart])
	copy(b[sumStart:], sum[:])
	return b
}

// decodeBlock parses a block the guest wrote; ok is false for anything else
// (zeros, garbage, a torn or altered block).
func decodeBlock(b []byte) (s stamp, ok bool) {
	if len(b) != BlockSize || !bytes.Equal(b[:len(magic)], magic[:]) {
		return stamp{}, false
	}
	if sum := sha256.Sum256(b[:sumStart]); !bytes.Equal(sum[:], b[sumStart:]) {
		return stamp{}, false
	}
	s.seq = binary.BigEndian.Uint64(b[offSeq:])
	s.index = int64(binary.BigEndian.Uint64(b[offIndex:]))
	p := offIdent
	var strs [2]string
	for i := range strs {
		n := int(binary.BigEndian.Uint16(b[p:]))
		p += 2
		if p+n > sumStart {
			return stamp{}, false
		}
		strs[i] = string(b[p : p+n])
		p += n
	}
	s.vm, s.disk = strs[0], strs[1]
	// The checksum matched, so the filler is the writer's; compare it anyway,
	// as a block is the guest's only if it is exactly what encodeBlock makes.
	if !bytes.Equal(b, encodeBlock(s)) {
		return stamp{}, false
	}
	return s, true
}

// isZero reports whether b holds only zero bytes.
func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// blockIndex is the block of a disk of n blocks that the disk's write number
// r goes to: the last block, then the first, then every other block once in
// a stride that spreads them over the disk, then around again.
func blockIndex(r, n int64) int64 {
	if n <= 1 {
		return 0
	}
	m := r % n
	switch m {
	case 0:
		return n - 1
	case 1:
		return 0
	}
	middle := n - 2 // blocks 1 .. n-2
	return 1 + ((m-2)*stride(middle))%middle
}

// stride is a step near middle/φ that is coprime to middle, so that stepping
// by it visits every one of middle blocks once, far apart.
func stride(middle int64) int64 {
	s := max(middle*618/1000, 1)
	for gcd(s, middle) != 1 {
		s++
	}
	return s
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
