package drbd

import "math"

// CounterDelta returns how much a monotonically increasing unsigned
// 64-bit drbd counter advanced from prev to cur.
//
// drbd's counters are u64 and wrap modulo 2^64, but they also restart
// from zero when a resource is taken down and up again. Both show up as
// cur < prev, so they are told apart by where prev was: if prev was in
// the upper half of the range, the counter most plausibly wrapped and
// the modular difference is returned; otherwise it was reset and cur
// (the amount counted since the reset) is returned.
func CounterDelta(prev, cur uint64) uint64 {
	if cur >= prev {
		return cur - prev
	}
	if prev > math.MaxUint64/2 {
		return cur - prev // modular arithmetic: the wrapped distance
	}
	return cur
}

// kibToBytes converts KiB to bytes, saturating instead of overflowing
// for absurd values (> 16 EiB).
func kibToBytes(kib uint64) uint64 {
	if kib > math.MaxUint64/1024 {
		return math.MaxUint64
	}
	return kib * 1024
}
