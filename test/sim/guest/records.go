package guest

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"
)

// ImageCheck is what a replication point's image of a disk holds of the
// guest's records (its Write batches).
type ImageCheck struct {
	// Writes is the number of blocks holding a write of the VM.
	Writes int
	// LastSeq is the newest write in the image; 0 if none.
	LastSeq uint64
	// Records is the number of records wholly in the image.
	Records int
	// TornRecords is the number of records partly in the image: some blocks
	// written, others not. A file system or database reads such a record as
	// corrupt, which is what an application-consistent point rules out.
	TornRecords int
}

// CheckImage reads image, the bytes of disk (the VM's volume name) of vm as a
// snapshot or copy holds them, and counts the guest's records in it. It
// assumes a VM with this one disk whose writes have not wrapped around it, so
// that every write of a record lands on its own block.
func (g *Guests) CheckImage(vm types.NamespacedName, disk string, image []byte) ImageCheck {
	l := g.log(vm)
	l.mu.Lock()
	defer l.mu.Unlock()

	present := map[uint64]bool{}
	var c ImageCheck
	for off := 0; off+BlockSize <= len(image); off += BlockSize {
		s, ok := decodeBlock(image[off : off+BlockSize])
		if !ok || s.vm != vm.String() || s.disk != disk {
			continue
		}
		present[s.seq] = true
		c.Writes++
		c.LastSeq = max(c.LastSeq, s.seq)
	}
	ends := make([]uint64, 0, len(l.recordEnds))
	for end := range l.recordEnds {
		ends = append(ends, end)
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	var first uint64 = 1
	for _, end := range ends {
		n := 0
		for seq := first; seq <= end; seq++ {
			if present[seq] {
				n++
			}
		}
		switch {
		case n == int(end-first+1):
			c.Records++
		case n > 0:
			c.TornRecords++
		}
		first = end + 1
	}
	// A record being written when the image was cut has no end yet.
	for seq := first; seq <= l.seq; seq++ {
		if present[seq] {
			c.TornRecords++
			break
		}
	}
	return c
}
