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
	for v, oos := range p.OOS {
		if oos == 0 || src.Disk[v] != "UpToDate" {
			continue
		}
		dst.Disk[v] = "Inconsistent" // a SyncTarget is never consistent mid-resync
		p.Total[v] = max(p.Total[v], oos)
		moved := min(oos, budget)
		p.OOS[v] = oos - moved
		transfer(src, dst, moved)
		if p.OOS[v] == 0 {
			dst.Disk[v] = "UpToDate"
			p.Total[v] = 0
		}
	}
	if w.DrainRateKiBps > 0 {
		drain := uint64(float64(w.DrainRateKiBps) * secs)
		for v, lag := range p.Lag {
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
		p.OOS[v] = w.SizeKiB
		p.Total[v] = w.SizeKiB
	}
}

// DrainLag delivers all protocol A lag of the resource immediately.
func (r *Res) DrainLag() {
	for _, a := range r.Nodes {
		for _, b := range r.Nodes {
			if a.Host >= b.Host || !r.Connected(a, b) {
				continue
			}
			p := r.Pair(a.Host, b.Host)
			src, dst := a, b
			if p.Source == b.Host {
				src, dst = b, a
			}
			for v, lag := range p.Lag {
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
