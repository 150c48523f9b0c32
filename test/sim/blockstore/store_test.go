package blockstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/test/sim/blockstore"
)

func TestSnapshotRestoreAndDiff(t *testing.T) {
	s := blockstore.New(4096, 1000)
	empty := s.Checksum("vol")
	s.Fill("vol", 1)
	require.NotEqual(t, empty, s.Checksum("vol"))
	s.Copy("vol", "snap-1")
	require.Equal(t, s.Checksum("vol"), s.Checksum("snap-1"))

	changed := s.Change("vol", 0.01, 2)
	require.Equal(t, 10, changed)
	s.Copy("vol", "snap-2")
	require.NotEqual(t, s.Checksum("snap-1"), s.Checksum("snap-2"), "a snapshot is a point-in-time copy")

	full := s.Plan("", "snap-1")
	require.Len(t, full, 1000)
	require.Equal(t, int64(1000*4096), s.Apply("snap-1", "dst", full))
	require.Equal(t, s.Checksum("snap-1"), s.Checksum("dst"))

	diff := s.Plan("snap-1", "snap-2")
	require.Len(t, diff, changed, "a diff moves only the changed blocks")
	require.Equal(t, int64(changed*4096), s.Apply("snap-2", "dst", diff))
	require.Equal(t, s.Checksum("snap-2"), s.Checksum("dst"))

	s.CopyGroup(map[string]string{"vol": "g-1", "dst": "g-2"})
	require.Equal(t, s.Checksum("vol"), s.Checksum("g-1"))
	s.Delete("g-1")
	require.False(t, s.Exists("g-1"))
}
