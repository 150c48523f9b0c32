package drbd

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExternalMetaSize(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		data  int64
		peers int
		want  int64
	}{
		{1 * gib, 1, 1 << 20},
		{1 * gib, 0, 1 << 20},
		{100 * gib, 1, 4 << 20},   // 3.2 MiB of bitmap plus 36 KiB
		{100 * gib, 2, 7 << 20},   // each peer its own bitmap
		{2048 * gib, 1, 65 << 20}, // 64 MiB of bitmap plus 36 KiB
	} {
		got := ExternalMetaSize(tc.data, tc.peers)
		assert.Equal(t, tc.want, got, "%d GiB, %d peers", tc.data/gib, tc.peers)
		assert.GreaterOrEqual(t, ExternalMetaCovers(got, tc.peers), tc.data, "the metadata covers its data")
	}
}

// TestExternalMetaLayoutMatchesDrbdmeta: real drbdmeta, run on an image file of
// the size ExternalMetaSize gives, puts the bitmap where ExternalMetaCovers
// assumes it starts.
func TestExternalMetaLayoutMatchesDrbdmeta(t *testing.T) {
	drbdmeta, err := exec.LookPath("drbdmeta")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/drbdmeta"); serr != nil {
			t.Skip("drbdmeta not installed; install drbd-utils")
		}
		drbdmeta = "/usr/sbin/drbdmeta"
	}
	img := filepath.Join(t.TempDir(), "meta.img")
	size := ExternalMetaSize(10<<30, 1)
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, size))
	createMD := func() []byte {
		out, err := exec.Command(drbdmeta, "--force", "0", "v09", img, "flex-external", "create-md", "1").CombinedOutput()
		require.NoError(t, err, "%s", out)
		return out
	}
	createMD()
	// drbdmeta prints the offsets of metadata it finds in place: the second run
	// shows those of the first.
	out := createMD()
	offset := func(name string) int64 {
		m := regexp.MustCompile(name + ` (\d+)`).FindSubmatch(out)
		require.NotNil(t, m, "%s in %s", name, out)
		v, err := strconv.ParseInt(string(m[1]), 10, 64)
		require.NoError(t, err)
		return v
	}
	assert.Equal(t, int64(0), offset("md_offset"))
	assert.Equal(t, int64(4096), offset("al_offset"))
	assert.Equal(t, int64(metaBitmapOffset), offset("bm_offset"))
}
