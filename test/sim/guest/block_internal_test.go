package guest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBlockIndexVisitsEveryBlockOnceLastAndFirstFirst(t *testing.T) {
	for _, n := range []int64{1, 2, 3, 4, 16, 17, 256, 1000, 262144} {
		seen := make(map[int64]bool, n)
		for r := range n {
			i := blockIndex(r, n)
			require.True(t, i >= 0 && i < n, "n=%d r=%d: index %d", n, r, i)
			require.False(t, seen[i], "n=%d r=%d: block %d again before the disk wrapped", n, r, i)
			seen[i] = true
		}
		require.Equal(t, n-1, blockIndex(0, n), "n=%d: the last block first", n)
		require.Equal(t, blockIndex(0, n), blockIndex(n, n), "n=%d: wraps around", n)
		if n > 1 {
			require.Equal(t, int64(0), blockIndex(1, n), "n=%d: then the first", n)
		}
	}
}

func TestDecodeBlock(t *testing.T) {
	s := stamp{vm: "apps/db", disk: "rootdisk", seq: 42, index: 7}
	b := encodeBlock(s)
	got, ok := decodeBlock(b)
	require.True(t, ok)
	require.Equal(t, s, got)
	require.False(t, bytes.Equal(b, encodeBlock(stamp{vm: "apps/db", disk: "rootdisk", seq: 43, index: 7})), "another write differs")

	torn := bytes.Clone(b)
	copy(torn[BlockSize/2:], make([]byte, BlockSize/2))
	_, ok = decodeBlock(torn)
	require.False(t, ok, "a torn block")
	_, ok = decodeBlock(make([]byte, BlockSize))
	require.False(t, ok, "zeros")
}
