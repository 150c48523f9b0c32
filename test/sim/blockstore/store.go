package blockstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"sort"
	"sync"
)

// Store holds images by handle. It is safe for concurrent use; the simulated
// clusters of one test process share one store.
type Store struct {
	blockSize int64
	blocks    int

	mu     sync.Mutex
	images map[string][]uint64
}

// New returns a store whose images have blocks blocks of blockSize bytes.
func New(blockSize int64, blocks int) *Store {
	return &Store{blockSize: blockSize, blocks: blocks, images: map[string][]uint64{}}
}

// BlockSize is the size of one block in bytes.
func (s *Store) BlockSize() int64 { return s.blockSize }

// Blocks is the number of blocks of every image.
func (s *Store) Blocks() int { return s.blocks }

// Size is the size of every image in bytes.
func (s *Store) Size() int64 { return s.blockSize * int64(s.blocks) }

// image returns the blocks of handle, allocating zeros; s.mu is held.
func (s *Store) image(handle string) []uint64 {
	img, ok := s.images[handle]
	if !ok {
		img = make([]uint64, s.blocks)
		s.images[handle] = img
	}
	return img
}

// Write sets one block of an image.
func (s *Store) Write(handle string, block int, value uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.image(handle)[block] = value
}

// Fill writes every block of an image with values derived from seed.
func (s *Store) Fill(handle string, seed uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	img := s.image(handle)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range img {
		img[i] = r.Uint64() | 1
	}
}

// Change rewrites a share of an image's blocks (at least one) with new values
// derived from seed and returns how many blocks it changed.
func (s *Store) Change(handle string, share float64, seed uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	img := s.image(handle)
	n := max(1, int(float64(len(img))*share))
	r := rand.New(rand.NewPCG(seed, ^seed))
	for _, i := range r.Perm(len(img))[:n] {
		old := img[i]
		for img[i] == old {
			img[i] = r.Uint64() | 1
		}
	}
	return n
}

// Checksum is a digest of an image's contents.
func (s *Store) Checksum(handle string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := sha256.New()
	var b [8]byte
	img := s.images[handle]
	for i := range s.blocks {
		var v uint64
		if img != nil {
			v = img[i]
		}
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Exists reports whether an image was ever written or copied.
func (s *Store) Exists(handle string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.images[handle]
	return ok
}

// Copy makes dst a copy of src: a snapshot of a volume or a restore of one.
func (s *Store) Copy(src, dst string) { s.CopyGroup(map[string]string{src: dst}) }

// CopyGroup makes every pair's destination a copy of its source at one point in
// time, as a group snapshot does.
func (s *Store) CopyGroup(srcToDst map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for src, dst := range srcToDst {
		s.images[dst] = append([]uint64(nil), s.image(src)...)
	}
}

// Delete drops an image.
func (s *Store) Delete(handle string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.images, handle)
}

// Handles lists the images, sorted.
func (s *Store) Handles() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.images))
	for h := range s.images {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// Plan lists the blocks a sync from target into dst writes: every block when
// base is empty (a full sync), else those that differ between base and target.
func (s *Store) Plan(base, target string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.image(target)
	out := make([]int, 0, len(t))
	if base == "" {
		for i := range t {
			out = append(out, i)
		}
		return out
	}
	b := s.image(base)
	for i := range t {
		if b[i] != t[i] {
			out = append(out, i)
		}
	}
	return out
}

// Apply writes the listed blocks of src into dst and returns the bytes moved.
func (s *Store) Apply(src, dst string, blocks []int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	from, to := s.image(src), s.image(dst)
	for _, i := range blocks {
		to[i] = from[i]
	}
	return int64(len(blocks)) * s.blockSize
}
