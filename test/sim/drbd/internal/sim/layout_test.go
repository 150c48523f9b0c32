package sim

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

const realDrbdmeta = "/usr/sbin/drbdmeta"

// drbdmetaOffsets runs real drbdmeta create-md on a fresh sparse image of
// size bytes and reads back the offsets dump-md reports.
func drbdmetaOffsets(t *testing.T, size int64, peers int) (md, al, bm int64) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(realDrbdmeta, "--force", "0", "v09", img, "internal", "create-md", strconv.Itoa(peers)).CombinedOutput(); err != nil {
		t.Fatalf("drbdmeta create-md: %v\n%s", err, out)
	}
	out, err := exec.Command(realDrbdmeta, "--force", "0", "v09", img, "internal", "dump-md").Output()
	if err != nil {
		t.Fatalf("drbdmeta dump-md: %v", err)
	}
	get := func(name string) int64 {
		m := regexp.MustCompile(`# ` + name + ` (\d+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("dump-md printed no %s:\n%s", name, out)
		}
		v, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return v
	}
	return get("md_offset"), get("al_offset"), get("bm_offset")
}

// TestInternalLayoutMatchesDrbdmeta: the simulator puts internal metadata
// where real drbdmeta does, for several sizes (aligned or not) and peer
// counts, and the device exposes the data area below the bitmap.
func TestInternalLayoutMatchesDrbdmeta(t *testing.T) {
	if _, err := os.Stat(realDrbdmeta); err != nil {
		t.Skip("no real drbdmeta here")
	}
	for _, tc := range []struct {
		size  int64
		peers int
	}{{64 << 20, 1}, {100 << 20, 1}, {1<<30 + 12345, 1}, {3 << 30, 1}, {64 << 20, 3}, {1 << 30, 7}} {
		t.Run(fmt.Sprintf("%d-%dpeers", tc.size, tc.peers), func(t *testing.T) {
			md, al, bm := drbdmetaOffsets(t, tc.size, tc.peers)
			l := InternalLayout(tc.size, tc.peers)
			if l.MDOffset != md || l.ALOffset != al || l.BMOffset != bm {
				t.Fatalf("sim md/al/bm %d/%d/%d, drbdmeta %d/%d/%d", l.MDOffset, l.ALOffset, l.BMOffset, md, al, bm)
			}
			if l.DataSize != bm {
				t.Fatalf("device size %d, want the data area below the bitmap, %d", l.DataSize, bm)
			}
		})
	}
}

// TestUsableSizeMatchesDrbdmeta: with a file system that fits, drbdmeta
// prints the kB left usable by the configuration; the simulator's device
// size is exactly that.
func TestUsableSizeMatchesDrbdmeta(t *testing.T) {
	if _, err := os.Stat(realDrbdmeta); err != nil {
		t.Skip("no real drbdmeta here")
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("no mkfs.ext4")
	}
	img := filepath.Join(t.TempDir(), "img")
	const size = 100 << 20
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", "-F", img, "32M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	l := InternalLayout(size, 1)
	if err := checkExistingData(img, l); err != nil {
		t.Fatalf("sim refused a file system that fits: %v", err)
	}
	out, _ := exec.Command(realDrbdmeta, "--force", "0", "v09", img, "internal", "create-md", "1").CombinedOutput()
	m := regexp.MustCompile(`(\d+) kB left usable`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("drbdmeta printed no usable size:\n%s", out)
	}
	if want, _ := strconv.ParseInt(string(m[1]), 10, 64); l.DataSize>>10 != want {
		t.Fatalf("sim device %d kB, drbdmeta leaves %d kB usable", l.DataSize>>10, want)
	}
}

// TestExtFilesystemRefusedLikeDrbdmeta: an ext4 file system over the whole
// image would be truncated by internal metadata; drbdmeta and the simulator
// both refuse with exit code 40 and leave the image alone.
func TestExtFilesystemRefusedLikeDrbdmeta(t *testing.T) {
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("no mkfs.ext4")
	}
	img := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", "-F", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	before, _ := os.ReadFile(img)
	err = checkExistingData(img, InternalLayout(64<<20, 1))
	var ce *cmdError
	if !errors.As(err, &ce) || ce.code != 40 {
		t.Fatalf("sim: %v, want exit 40", err)
	}
	for _, want := range []string{"Found ext3 filesystem", "Device size would be truncated", "Operation refused."} {
		if !bytes.Contains([]byte(ce.msg), []byte(want)) {
			t.Fatalf("sim message lacks %q:\n%s", want, ce.msg)
		}
	}
	if _, err := os.Stat(realDrbdmeta); err == nil {
		out, err := exec.Command(realDrbdmeta, "--force", "0", "v09", img, "internal", "create-md", "1").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ce.code {
			t.Fatalf("real drbdmeta: %v (want exit %d)\n%s", err, ce.code, out)
		}
		if !bytes.Contains(out, []byte("Device size would be truncated")) {
			t.Fatalf("real drbdmeta said:\n%s", out)
		}
	}
	if after, _ := os.ReadFile(img); !bytes.Equal(before, after) {
		t.Fatal("a refused create-md changed the image")
	}
}

// TestExternalLayout: flex-external metadata starts at 0 of the meta
// device (AL at 4 KiB, bitmap at 36 KiB, as drbdmeta prints for
// flex-external) and the device is the whole backing device while the
// bitmap covers it.
func TestExternalLayout(t *testing.T) {
	l := ExternalLayout(1<<30, 1<<20, 1)
	if l.MDOffset != 0 || l.ALOffset != 4096 || l.BMOffset != 36864 || l.DataSize != 1<<30 {
		t.Fatalf("layout %+v", l)
	}
	// 1 MiB of meta: (1 MiB - 36 KiB) of bitmap covers 4096*8 bytes per byte.
	if small := ExternalLayout(1<<40, 1<<20, 1); small.DataSize != (1<<20-36864)*8*4096 {
		t.Fatalf("clipped to %d", small.DataSize)
	}
}

func TestBlocks(t *testing.T) {
	var b Blocks
	b = b.Add(0, 4096).Add(8192, 12288).Add(4096, 8192)
	if len(b) != 1 || b[0] != [2]int64{0, 12288} {
		t.Fatalf("merge: %v", b)
	}
	b = b.Remove(4096, 8192)
	if b.Bytes() != 8192 || !b.Contains(0) || b.Contains(4096) || !b.Contains(8192) {
		t.Fatalf("remove: %v", b)
	}
	if low := b.Add(20000, 40000).Lowest(10000); low.Bytes() != 10000 || low[0][0] != 0 {
		t.Fatalf("lowest: %v", low)
	}
}
