package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrCongested is returned by a protocol A write that does not fit in the
// connection's send buffer: DRBD blocks the write until the buffer drains
// (on-congestion block, DRBD's default; drbd.conf(5), sndbuf-size and
// on-congestion). The Fabric waits and retries, as the writer would block.
var ErrCongested = errors.New("send buffer full")

// parseSize reads a drbd.conf size in bytes with an optional k, M or G
// suffix (sndbuf-size has the unit "bytes": config_flags.c in
// LINBIT/drbd-utils, user/v9).
func parseSize(s string) (uint64, error) {
	mult := uint64(1)
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"), strings.HasSuffix(s, "g"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	return n * mult, nil
}

// inFlightKiB is what n's protocol A connection to m holds unsent, over all
// volumes: the window of volumes with contents, the lag of the others.
func (r *Res) inFlightKiB(n, m *Node) uint64 {
	var kib uint64
	p := r.Pair(n.Host, m.Host)
	for v := range r.Volumes {
		if d := n.dev(v); d != nil && d.File {
			kib += uint64(d.Window[m.Host].Bytes()) / 1024
		} else if p.Source == n.Host {
			kib += p.Lag[v]
		}
	}
	return kib
}

// congested refuses a write of kib KiB on n that one of its protocol A
// connections has no room for in its send buffer (SndBufKiB; 0 is DRBD's
// auto-tuned buffer, which the simulator leaves unbounded).
func (r *Res) congested(n *Node, kib uint64) error {
	if r.Protocol != "A" || r.SndBufKiB == 0 {
		return nil
	}
	for _, m := range r.Peers(n) {
		if !n.configures(m) || !r.Connected(n, m) {
			continue
		}
		if in := r.inFlightKiB(n, m); in > 0 && in+kib > r.SndBufKiB {
			return fmt.Errorf("drbdsim: %s on %s: %d KiB in flight to %s, sndbuf-size %d KiB: %w", r.Name, n.Host, in, m.Host, r.SndBufKiB, ErrCongested)
		}
	}
	return nil
}
