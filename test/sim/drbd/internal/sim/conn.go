package sim

// Connection handshakes: when two nodes' link comes up, their generation
// identifiers decide who is SyncSource or detect a split brain (drbd kernel
// drbd_receiver.c drbd_sync_handshake / drbd_uuid_compare, and the DRBD 9
// user's guide, "Split brain notification and automatic recovery").

// handshake outcomes of one volume, from a's point of view.
const (
	hsEqual = iota
	hsSourceBitmap
	hsSourceFull
	hsTargetBitmap
	hsTargetFull
	hsSplitBrain
	hsUnrelated
)

// compareUUIDs is drbd_uuid_compare reduced to the rules the simulator
// needs: equal current UUIDs need no resync; a peer whose current UUID is
// the one our bitmap towards it starts from missed only our bitmap's blocks;
// a peer whose current UUID is in our history missed more than our bitmap
// knows (full sync); fresh metadata (UUID_JUST_CREATED) gets a full sync;
// both having moved on from the same bitmap UUID is a split brain; no
// common ancestor at all is unrelated data.
func compareUUIDs(a, b *Node, v int) int {
	da, db := a.dev(v), b.dev(v)
	ca, cb := da.Current, db.Current
	switch {
	case ca == cb:
		return hsEqual
	case ca == uuidJustCreated:
		return hsTargetFull
	case cb == uuidJustCreated:
		return hsSourceFull
	case da.BitmapUUID[b.Host] == cb:
		return hsSourceBitmap
	case db.BitmapUUID[a.Host] == ca:
		return hsTargetBitmap
	case cb == da.History[0] || cb == da.History[1]:
		return hsSourceFull
	case ca == db.History[0] || ca == db.History[1]:
		return hsTargetFull
	}
	ancestors := func(d *Dev, peer string) []uint64 {
		return []uint64{d.BitmapUUID[peer], d.History[0], d.History[1]}
	}
	for _, x := range ancestors(da, b.Host) {
		for _, y := range ancestors(db, a.Host) {
			if x != 0 && x == y {
				return hsSplitBrain
			}
		}
	}
	return hsUnrelated
}

// settle runs the connection state machine after every change: a link that
// came up handshakes, a link that went down turns in-flight protocol A
// blocks into bitmap blocks and makes a Primary start a new current UUID
// with its next write.
func (w *World) settle() {
	for _, r := range w.Resources {
		for _, a := range r.Nodes {
			for _, b := range r.Nodes {
				if a.Host >= b.Host {
					continue
				}
				up := r.Connected(a, b)
				if !up {
					r.refuseAuth(a, b)
				}
				if r.Pairs[pairKey(a.Host, b.Host)] == nil && !up {
					continue
				}
				p := r.Pair(a.Host, b.Host)
				if up == p.Link {
					continue
				}
				p.Link = up
				if up {
					w.handshake(r, a, b)
				} else {
					r.linkLost(a, b)
				}
			}
		}
	}
}

// linkLost is a connection loss between a and b (drbd_state.c: the
// Primary sets NEW_CUR_UUID; undelivered writes stay in the bitmap).
func (r *Res) linkLost(a, b *Node) {
	for v := range r.Volumes {
		for _, x := range []*Node{a, b} {
			d := x.dev(v)
			if d == nil {
				continue
			}
			if x.Role == "Primary" {
				d.NewCur = true
			}
			y := b
			if x == b {
				y = a
			}
			for _, blk := range d.Window[y.Host] {
				d.markOOS(y.Host, blk[0], blk[1])
			}
			delete(d.Window, y.Host)
		}
		r.syncCounters(a, b, v)
	}
}

// handshake decides, when a and b connect, per volume who resyncs from
// whom; a split brain that the after-sb policies or --discard-my-data do
// not resolve leaves both sides StandAlone with data untouched.
func (w *World) handshake(r *Res, a, b *Node) {
	defer func() { a.DiscardMyData, b.DiscardMyData = false, false }()
	out := map[int]int{}
	sb, unrelated := false, false
	for v := range r.Volumes {
		if a.dev(v) == nil || b.dev(v) == nil {
			continue
		}
		out[v] = compareUUIDs(a, b, v)
		sb = sb || out[v] == hsSplitBrain
		unrelated = unrelated || out[v] == hsUnrelated
	}
	standAlone := func() {
		if a.StandAlone == nil {
			a.StandAlone = map[string]bool{}
		}
		if b.StandAlone == nil {
			b.StandAlone = map[string]bool{}
		}
		a.StandAlone[b.Host], b.StandAlone[a.Host] = true, true
		r.Pair(a.Host, b.Host).Link = false
	}
	if unrelated {
		standAlone() // "Unrelated data, aborting!"
		return
	}
	if sb {
		victim := r.splitBrainVictim(a, b)
		if victim == nil {
			standAlone() // "Split-Brain detected but unresolved, dropping connection!"
			return
		}
		src := a
		if victim == a {
			src = b
		}
		for v, o := range out {
			if o == hsSplitBrain || o == hsEqual {
				out[v] = hsSourceBitmap
				if src == b {
					out[v] = hsTargetBitmap
				}
			}
		}
	}
	// A Primary never becomes SyncTarget of blocks it lacks: DRBD drops the
	// connection ("I shall become SyncTarget, but I am primary!").
	for v, o := range out {
		src, dst := a, b
		if o == hsTargetBitmap || o == hsTargetFull {
			src, dst = b, a
		}
		// (Volumes without contents keep the simulator's older leniency,
		// which tests of the product's safety recorder rely on.)
		if byteMode(src, dst, v) && (o == hsSourceFull || o == hsTargetFull || (o != hsEqual && r.oosBytes(src, dst, v) > 0)) && dst.Role == "Primary" {
			standAlone()
			return
		}
	}
	for v, o := range out {
		switch o {
		case hsSourceBitmap:
			w.startResync(r, a, b, v, false)
		case hsSourceFull:
			w.startResync(r, a, b, v, true)
		case hsTargetBitmap:
			w.startResync(r, b, a, v, false)
		case hsTargetFull:
			w.startResync(r, b, a, v, true)
		case hsEqual:
			// Same data generation: blocks either side still has marked
			// (in-flight writes lost with the link) go from the UpToDate
			// side, the Primary if both are.
			if byteMode(a, b, v) && r.oosBytes(a, b, v) > 0 {
				src, dst := a, b
				if b.Disk[v] == "UpToDate" && (a.Disk[v] != "UpToDate" || b.Role == "Primary") {
					src, dst = b, a
				}
				w.startResync(r, src, dst, v, false)
			}
		}
	}
}

// oosBytes is the union of a's and b's bitmaps towards each other.
func (r *Res) oosBytes(a, b *Node, v int) int64 {
	da, db := a.dev(v), b.dev(v)
	if da == nil || db == nil {
		return int64(r.Pair(a.Host, b.Host).OOS[v]) * 1024
	}
	return da.BM[b.Host].Union(db.BM[a.Host]).Bytes()
}

// changes is how much a node wrote apart from its peer (its bitmap
// towards it); a volume without contents counts as changed.
func (r *Res) changes(n, peer *Node) int64 {
	var total int64
	for v := range r.Volumes {
		d := n.dev(v)
		if d == nil || !d.File {
			return 1 << 62
		}
		total += d.BM[peer.Host].Bytes()
	}
	return total
}

// splitBrainVictim applies the manual resolution (connect --discard-my-data)
// and the resource's after-sb-0pri/1pri/2pri policies (drbd_receiver.c
// drbd_asb_recover_0p/1p/2p); nil leaves the split brain unresolved.
func (r *Res) splitBrainVictim(a, b *Node) *Node {
	switch {
	case a.DiscardMyData && !b.DiscardMyData:
		return a
	case b.DiscardMyData && !a.DiscardMyData:
		return b
	case a.DiscardMyData && b.DiscardMyData:
		return nil
	}
	primaries := 0
	for _, n := range []*Node{a, b} {
		if n.Role == "Primary" {
			primaries++
		}
	}
	as0p := func() *Node {
		ca, cb := r.changes(a, b), r.changes(b, a)
		switch r.AfterSB[0] {
		case "discard-zero-changes":
			switch {
			case ca == 0 && cb == 0:
				return higherID(a, b)
			case ca == 0:
				return a
			case cb == 0:
				return b
			}
		case "discard-least-changes":
			switch {
			case ca < cb:
				return a
			case cb < ca:
				return b
			}
			return higherID(a, b)
		}
		return nil
	}
	var victim *Node
	switch primaries {
	case 0:
		victim = as0p()
	case 1:
		secondary := a
		if a.Role == "Primary" {
			secondary = b
		}
		switch r.AfterSB[1] {
		case "discard-secondary":
			victim = secondary
		case "consensus":
			if v := as0p(); v == secondary {
				victim = v
			}
		case "violently-as0p":
			victim = as0p()
		}
	case 2:
		if r.AfterSB[2] == "violently-as0p" {
			victim = as0p()
		}
	}
	if victim != nil && victim.Role == "Primary" && r.AfterSB[primaries] != "violently-as0p" {
		return nil // a Primary is only discarded violently
	}
	return victim
}

func higherID(a, b *Node) *Node {
	if a.NodeID > b.NodeID {
		return a
	}
	return b
}

// startResync makes src SyncSource of dst for volume v: of the union of
// both bitmaps, or of the whole device (full). dst takes src's data
// generation; it is Inconsistent until the resync ends.
func (w *World) startResync(r *Res, src, dst *Node, v int, full bool) {
	p := r.Pair(src.Host, dst.Host)
	p.Source = src.Host
	ds, dd := src.dev(v), dst.dev(v)
	if byteMode(src, dst, v) {
		if full {
			ds.markOOS(dst.Host, 0, ds.Layout.DataSize)
		}
		ds.BM = setBlocks(ds.BM, dst.Host, ds.BM[dst.Host].Union(dd.BM[src.Host]).Clip(min(ds.Layout.DataSize, dd.Layout.DataSize)))
		delete(dd.BM, src.Host)
		r.syncCounters(src, dst, v)
	} else if full {
		p.OOS[v] = w.SizeKiB
	}
	p.Total[v] = p.OOS[v]
	adoptUUIDs(src, dst, v)
	if p.OOS[v] > 0 {
		dst.Disk[v] = "Inconsistent"
	} else {
		finishResync(src, dst, v)
	}
}

// finishResync ends a resync of volume v: dst is UpToDate if src is, and
// the bitmap UUIDs between them are cleared.
func finishResync(src, dst *Node, v int) {
	if src.Disk[v] == "UpToDate" {
		dst.Disk[v] = "UpToDate"
	}
	if ds := src.dev(v); ds != nil {
		delete(ds.BitmapUUID, dst.Host)
		if dd := dst.dev(v); dd != nil {
			dd.Current = ds.Current
		}
	}
}

// adoptUUIDs gives a SyncTarget its source's data generation when the
// resync starts; the source's bitmap towards it counts from there.
func adoptUUIDs(src, dst *Node, v int) {
	ds, dd := src.dev(v), dst.dev(v)
	if ds == nil || dd == nil {
		return
	}
	if dd.Current != ds.Current {
		dd.History = [2]uint64{dd.Current, dd.History[0]}
	}
	dd.Current = ds.Current
	delete(dd.BitmapUUID, src.Host)
	if ds.BitmapUUID == nil {
		ds.BitmapUUID = map[string]uint64{}
	}
	ds.BitmapUUID[dst.Host] = ds.Current
}
