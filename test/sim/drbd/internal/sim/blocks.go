package sim

import "sort"

// Blocks is a set of byte ranges [start, end), sorted, disjoint and merged,
// each aligned to the 4 KiB a DRBD bitmap bit covers: the out-of-sync
// bitmap of a volume towards one peer, or the protocol A blocks in flight.
type Blocks [][2]int64

// blockSpan widens [off, off+n) to whole bitmap blocks.
func blockSpan(off, n int64) (int64, int64) {
	return off &^ (bmGranule - 1), align(off+n, bmGranule)
}

// Add marks [s, e).
func (b Blocks) Add(s, e int64) Blocks {
	if s >= e {
		return b
	}
	out := make(Blocks, 0, len(b)+1)
	i := 0
	for ; i < len(b) && b[i][1] < s; i++ {
		out = append(out, b[i])
	}
	for ; i < len(b) && b[i][0] <= e; i++ {
		s, e = min(s, b[i][0]), max(e, b[i][1])
	}
	out = append(out, [2]int64{s, e})
	return append(out, b[i:]...)
}

// Remove clears [s, e).
func (b Blocks) Remove(s, e int64) Blocks {
	var out Blocks
	for _, r := range b {
		if r[1] <= s || r[0] >= e {
			out = append(out, r)
			continue
		}
		if r[0] < s {
			out = append(out, [2]int64{r[0], s})
		}
		if r[1] > e {
			out = append(out, [2]int64{e, r[1]})
		}
	}
	return out
}

// Union is b ∪ o.
func (b Blocks) Union(o Blocks) Blocks {
	out := append(Blocks(nil), b...)
	for _, r := range o {
		out = out.Add(r[0], r[1])
	}
	return out
}

// Clip keeps what lies below size.
func (b Blocks) Clip(size int64) Blocks { return b.Remove(size, 1<<62) }

// Bytes is the total marked.
func (b Blocks) Bytes() int64 {
	var n int64
	for _, r := range b {
		n += r[1] - r[0]
	}
	return n
}

// Lowest is the first budget bytes of b in increasing offset order.
func (b Blocks) Lowest(budget int64) Blocks {
	var out Blocks
	for _, r := range b {
		if budget <= 0 {
			break
		}
		n := min(r[1]-r[0], budget)
		out = append(out, [2]int64{r[0], r[0] + n})
		budget -= n
	}
	return out
}

// Contains reports whether off lies in b.
func (b Blocks) Contains(off int64) bool {
	i := sort.Search(len(b), func(i int) bool { return b[i][1] > off })
	return i < len(b) && b[i][0] <= off
}

// setBlocks stores b as m[peer], creating the map, drops an empty set, and
// returns the map.
func setBlocks(m map[string]Blocks, peer string, b Blocks) map[string]Blocks {
	if len(b) == 0 {
		delete(m, peer)
		return m
	}
	if m == nil {
		m = map[string]Blocks{}
	}
	m[peer] = b
	return m
}
