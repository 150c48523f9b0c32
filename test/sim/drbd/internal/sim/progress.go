package sim

import "time"

// advance applies everything that happens with the passage of time:
// resync progress at SyncRateKiBps and protocol A lag draining.
func (w *World) advance(now time.Time) {
	if w.LastTick.IsZero() || now.Before(w.LastTick) {
		w.LastTick = now
		return
	}
	secs := now.Sub(w.LastTick).Seconds()
	w.LastTick = now
	w.dropExpiredOpeners(now)
	for _, r := range w.Resources {
		for _, a := range r.Nodes {
			for _, b := range r.Nodes {
				if a.Host < b.Host && r.Connected(a, b) {
					w.progressPair(r, a, b, secs)
				}
			}
		}
	}
}

func (w *World) progressPair(r *Res, a, b *Node, secs float64) {
	p := r.Pair(a.Host, b.Host)
	src, dst := a, b
	if p.Source == b.Host {
		src, dst = b, a
	}
	budget := uint64(float64(w.SyncRateKiBps) * secs)
	for v := range r.Volumes {
		if byteMode(a, b, v) {
			w.progressBytes(r, src, dst, v, int64(budget)*1024)
			if w.DrainRateKiBps > 0 {
				drain := p.drainBudget(a, b, v, int64(float64(w.DrainRateKiBps)*1024*secs))
				deliverWindow(a, b, v, drain)
				deliverWindow(b, a, v, drain)
				r.syncCounters(a, b, v)
			}
		}
	}
	for v, oos := range p.OOS {
		if byteMode(a, b, v) {
			continue
		}
		if oos == 0 || src.Disk[v] != "UpToDate" {
			continue
		}
		dst.Disk[v] = "Inconsistent" // a SyncTarget is never consistent mid-resync
		p.Total[v] = max(p.Total[v], oos)
		moved := min(oos, budget)
		p.OOS[v] = oos - moved
		transfer(src, dst, moved)
		if p.OOS[v] == 0 {
			finishResync(src, dst, v)
			p.Total[v] = 0
		}
	}
	if w.DrainRateKiBps > 0 {
		drain := uint64(float64(w.DrainRateKiBps) * secs)
		for v, lag := range p.Lag {
			if byteMode(a, b, v) {
				continue
			}
			moved := min(lag, drain)
			p.Lag[v] = lag - moved
			transfer(src, dst, moved)
		}
	}
}

// StartSync marks every volume of the pair as needing a full resync from
// source, e.g. after a forced promotion of fresh metadata.
func (w *World) StartSync(r *Res, source, peer *Node) {
	p := r.Pair(source.Host, peer.Host)
	p.Source = source.Host
	for v := range r.Volumes {
		if r.Connected(source, peer) {
			adoptUUIDs(source, peer, v)
		}
		if byteMode(source, peer, v) {
			ds, dd := source.dev(v), peer.dev(v)
			ds.markOOS(peer.Host, 0, ds.Layout.DataSize)
			ds.BM = setBlocks(ds.BM, peer.Host, ds.BM[peer.Host].Union(dd.BM[source.Host]).Clip(min(ds.Layout.DataSize, dd.Layout.DataSize)))
			delete(dd.BM, source.Host)
			r.syncCounters(source, peer, v)
			p.Total[v] = p.OOS[v]
			continue
		}
		p.OOS[v] = w.SizeKiB
		p.Total[v] = w.SizeKiB
	}
}

// minResyncStep is the least a resync step copies (unless less remains).
const minResyncStep = 256 << 10

// progressBytes copies up to budget bytes of the blocks src and dst differ
// in (the union of their bitmaps), lowest offsets first as DRBD's resync
// walks the bitmap (drbd kernel drbd_sender.c, drbd_worker.c before DRBD 9:
// make_resync_request moves a cursor up through the bitmap), and clears them: a block changed behind DRBD's back
// after the resync passed it is never sent.
func (w *World) progressBytes(r *Res, src, dst *Node, v int, budget int64) {
	if src.Disk[v] != "UpToDate" || r.oosBytes(src, dst, v) == 0 {
		return
	}
	ds, dd := src.dev(v), dst.dev(v)
	oos := ds.BM[dst.Host].Union(dd.BM[src.Host])
	dst.Disk[v] = "Inconsistent" // a SyncTarget is never consistent mid-resync
	p := r.Pair(src.Host, dst.Host)
	if p.Credit == nil {
		p.Credit = map[int]int64{}
	}
	budget += p.Credit[v]
	if budget < min(minResyncStep, oos.Bytes()) {
		p.Credit[v] = budget
		return
	}
	chunk := oos.Lowest(budget &^ (bmGranule - 1))
	if p.Credit[v] = budget - chunk.Bytes(); p.Credit[v] <= 0 || chunk.Bytes() == oos.Bytes() {
		delete(p.Credit, v)
	}
	if err := copyBlocks(ds, dd, chunk); err != nil {
		return // the files went away: the resync stalls, as on an I/O error
	}
	for _, c := range chunk {
		ds.BM = setBlocks(ds.BM, dst.Host, ds.BM[dst.Host].Remove(c[0], c[1]))
		dd.BM = setBlocks(dd.BM, src.Host, dd.BM[src.Host].Remove(c[0], c[1]))
	}
	transfer(src, dst, uint64(chunk.Bytes()/1024))
	r.syncCounters(src, dst, v)
	if r.oosBytes(src, dst, v) == 0 {
		finishResync(src, dst, v)
	}
}

// deliverWindow delivers about budget bytes of src's protocol A blocks in
// flight to dst, in whole 4 KiB blocks: DRBD sends a write request whole, in
// one data packet (drbd_sender.c, drbd_send_dblock), and the peer applies it
// whole, so a block the guest wrote at once never arrives torn.
func deliverWindow(src, dst *Node, v int, budget int64) {
	ds, dd := src.dev(v), dst.dev(v)
	win := ds.Window[dst.Host]
	if len(win) == 0 || budget <= 0 {
		return
	}
	chunk := win.Lowest(budget &^ (bmGranule - 1))
	if len(chunk) == 0 {
		return
	}
	if copyBlocks(ds, dd, chunk) != nil {
		return
	}
	for _, c := range chunk {
		ds.Window = setBlocks(ds.Window, dst.Host, ds.Window[dst.Host].Remove(c[0], c[1]))
	}
	transfer(src, dst, uint64(chunk.Bytes()/1024))
}

// drainBudget adds n bytes of drain to the pair's credit for volume v and
// takes the whole 4 KiB blocks of it (deliverWindow): a slow link sends a
// block once enough time has passed for all of it. The credit goes when
// nothing is in flight, so an idle link saves none up.
func (p *Pair) drainBudget(a, b *Node, v int, n int64) int64 {
	if len(a.dev(v).Window[b.Host]) == 0 && len(b.dev(v).Window[a.Host]) == 0 {
		delete(p.DrainCredit, v)
		return 0
	}
	if p.DrainCredit == nil {
		p.DrainCredit = map[int]int64{}
	}
	n += p.DrainCredit[v]
	whole := n &^ (bmGranule - 1)
	p.DrainCredit[v] = n - whole
	return whole
}

// DrainLag delivers all protocol A lag of the resource immediately.
func (r *Res) DrainLag() { r.drainLag(nil) }

// drainLag delivers the protocol A lag of the connected pairs that include
// node only (all of them when node is nil).
func (r *Res) drainLag(node *Node) {
	for _, a := range r.Nodes {
		for _, b := range r.Nodes {
			if a.Host >= b.Host || !r.Connected(a, b) || node != nil && a != node && b != node {
				continue
			}
			p := r.Pair(a.Host, b.Host)
			src, dst := a, b
			if p.Source == b.Host {
				src, dst = b, a
			}
			for v, lag := range p.Lag {
				if byteMode(a, b, v) {
					deliverWindow(a, b, v, 1<<62)
					deliverWindow(b, a, v, 1<<62)
					r.syncCounters(a, b, v)
					continue
				}
				transfer(src, dst, lag)
				p.Lag[v] = 0
			}
		}
	}
}

// LoseLag turns undelivered protocol A writes into out-of-sync blocks,
// which is what happens when the link drops with data in flight.
func (r *Res) LoseLag() {
	for _, p := range r.Pairs {
		for v, lag := range p.Lag {
			if r.pairByteMode(p, v) {
				continue // linkLost moves the window into the bitmap
			}
			p.OOS[v] += lag
			p.Lag[v] = 0
		}
	}
}

func transfer(src, dst *Node, kib uint64) {
	if kib == 0 {
		return
	}
	src.Sent[dst.Host] += kib
	dst.Recv[src.Host] += kib
}

// timeDriven reports whether the passage of time alone would change the world:
// a resync or a protocol A drain under way on a connected pair. When it does
// not, a reader can skip re-reading a state file that did not change.
func (w *World) timeDriven() bool {
	for _, r := range w.Resources {
		for _, n := range r.Nodes {
			for _, d := range n.Devs {
				for _, until := range d.Openers {
					if until != 0 {
						return true // a closed opener's linger ends with time
					}
				}
			}
		}
		for _, a := range r.Nodes {
			for _, b := range r.Nodes {
				if a.Host >= b.Host || !r.Connected(a, b) {
					continue
				}
				p := r.Pair(a.Host, b.Host)
				for _, oos := range p.OOS {
					if oos > 0 {
						return true
					}
				}
				if w.DrainRateKiBps > 0 {
					for _, lag := range p.Lag {
						if lag > 0 {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

// pairByteMode is byteMode for the nodes of p.
func (r *Res) pairByteMode(p *Pair, v int) bool {
	for k, q := range r.Pairs {
		if q != p {
			continue
		}
		for _, a := range r.Nodes {
			for _, b := range r.Nodes {
				if a.Host < b.Host && pairKey(a.Host, b.Host) == k {
					return byteMode(a, b, v)
				}
			}
		}
	}
	return false
}
