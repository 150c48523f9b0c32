package sim

import "testing"

// TestCompareUUIDs checks the drbd_uuid_compare rules the handshake uses
// (drbd kernel drbd_receiver.c).
func TestCompareUUIDs(t *testing.T) {
	const u1, u2, u3 = 0x1000, 0x2000, 0x3000
	node := func(host string, cur, bm uint64, hist ...uint64) *Node {
		d := &Dev{Current: cur, BitmapUUID: map[string]uint64{}}
		if bm != 0 {
			d.BitmapUUID[map[string]string{"a": "b", "b": "a"}[host]] = bm
		}
		copy(d.History[:], hist)
		return &Node{Host: host, Devs: map[int]*Dev{0: d}}
	}
	for name, tc := range map[string]struct {
		a, b *Node
		want int
	}{
		"equal":                     {node("a", u1, 0), node("b", u1, 0), hsEqual},
		"fresh peer: full":          {node("a", u1, 0), node("b", uuidJustCreated, 0), hsSourceFull},
		"fresh self: full target":   {node("a", uuidJustCreated, 0), node("b", u1, 0), hsTargetFull},
		"a wrote apart: bitmap":     {node("a", u2, u1), node("b", u1, 0), hsSourceBitmap},
		"b promoted apart: bitmap":  {node("a", u1, 0), node("b", u2, u1), hsTargetBitmap},
		"peer in history: full":     {node("a", u3, 0, u1), node("b", u1, 0), hsSourceFull},
		"both moved on: split":      {node("a", u2, u1), node("b", u3, u1), hsSplitBrain},
		"no common past: unrelated": {node("a", u2, 0), node("b", u3, 0), hsUnrelated},
	} {
		if got := compareUUIDs(tc.a, tc.b, 0); got != tc.want {
			t.Errorf("%s: got %d, want %d", name, got, tc.want)
		}
	}
}
