package sim

import (
	"encoding/binary"
	"fmt"
	"os"
)

// Metadata layout as drbd-utils user/shared/drbdmeta.c computes it for the v09
// format (re_initialize_md_offsets, bm_bytes, max_usable_sectors,
// v07_style_md_get_byte_offset), with the default 4 KiB bitmap granularity and
// one 32 KiB activity-log stripe.
const (
	mdSuperblock    = 4096      // the "drbd meta data super block"
	alBytes         = 8 * 4096  // al_stripes(1) * al_stripe_size_4k(8) * 4 KiB
	bmGranule       = 4096      // bytes of data per bitmap bit (BM_BLOCK_SIZE_4k)
	soMuch          = 68 * 1024 // drbdmeta.c SO_MUCH: it reads (and needs) this much
	uuidJustCreated = 4         // drbdmeta.c create-md: current-uuid UUID_JUST_CREATED
)

// Layout is where DRBD keeps a volume's metadata and how much data the
// device exposes. Offsets are bytes in the metadata file (the backing file
// itself for internal metadata).
type Layout struct {
	External                     bool
	MDOffset, ALOffset, BMOffset int64
	DataSize                     int64 // bytes /dev/drbdN exposes
}

// bmBytes is drbdmeta.c bm_bytes: one bit per 4 KiB of data rounded up to
// 64-bit words, times the peer slots, rounded up to 4 KiB.
func bmBytes(dataBytes int64, maxPeers int) int64 {
	bits := (dataBytes + bmGranule - 1) / bmGranule
	bits = (bits + 63) / 64 * 64
	return align(bits/8*int64(maxPeers), 4096)
}

func align(x, a int64) int64 { return (x + a - 1) / a * a }

// InternalLayout is flex-internal metadata on a backing device of size bytes:
// the superblock in the last 4 KiB-aligned 4 KiB, the activity log below it,
// the bitmap below that, and the data area (the device) below the bitmap
// (drbdmeta.c max_usable_sectors: min of md, al and bm offsets).
func InternalLayout(size int64, maxPeers int) Layout {
	maxPeers = max(maxPeers, 1)
	md := (size - mdSuperblock) &^ 4095
	mdSizeSect := align(bmBytes(size, maxPeers)/512, 8) + 8 + alBytes/512 // MD_AL_OFFSET_07 + al
	bm := md + (-mdSizeSect+8)*512
	return Layout{MDOffset: md, ALOffset: md - alBytes, BMOffset: bm, DataSize: bm}
}

// ExternalLayout is flex-external metadata in a meta device of metaSize
// bytes for a backing device of size bytes: superblock at 0, activity log
// at 4 KiB, bitmap after it to the end; the device exposes the whole backing
// device, clipped to what the bitmap covers (drbdmeta.c max_usable_sectors;
// the kernel's drbd_get_max_capacity clips the same way).
func ExternalLayout(size, metaSize int64, maxPeers int) Layout {
	maxPeers = max(maxPeers, 1)
	l := Layout{External: true, MDOffset: 0, ALOffset: mdSuperblock, BMOffset: mdSuperblock + alBytes}
	mdSect := metaSize / 512
	bmSect := mdSect - l.BMOffset/512
	covers := bmSect * 512 * 8 / 64 / int64(maxPeers) * 64 * bmGranule
	l.DataSize = min(size, max(covers, 0))
	return l
}

// fsFound is what drbdmeta.c check_for_existing_data recognised in the first
// 68 KiB of a device: a file system type and the bytes it says it uses.
type fsFound struct {
	Type  string
	Bytes int64
}

// detectFS looks for an ext2/3/4 superblock as drbdmeta.c may_be_extX does:
// magic 0xEF53 at 0x438, block count (s_blocks_count_lo) at 0x404 and the
// log block size at 0x418. It reports found=false for anything else.
func detectFS(buf []byte) (fsFound, bool) {
	if len(buf) < 0x460 || binary.LittleEndian.Uint16(buf[0x438:]) != 0xEF53 {
		return fsFound{}, false
	}
	typ := "ext2 filesystem"
	if buf[0x45c]&4 == 4 { // has_journal
		typ = "ext3 filesystem"
	}
	bsize := int64(4096)
	switch binary.LittleEndian.Uint32(buf[0x418:]) {
	case 0:
		bsize = 1024
	case 1:
		bsize = 2048
	}
	return fsFound{Type: typ, Bytes: int64(binary.LittleEndian.Uint32(buf[0x404:])) * bsize}, true
}

// checkExistingData is drbdmeta.c check_for_existing_data for create-md:
// a file system that reaches beyond what the device would expose with
// internal metadata (or any file system on an external meta device) is
// refused with exit code 40. out receives drbdmeta's stdout text.
func checkExistingData(metaPath string, l Layout) error {
	f, err := os.Open(metaPath)
	if err != nil {
		return fail(20, "open(%s) failed: %v", metaPath, err)
	}
	defer f.Close()
	buf := make([]byte, soMuch)
	n, _ := f.ReadAt(buf, 0)
	fs, ok := detectFS(buf[:n])
	if !ok {
		return nil
	}
	head := fmt.Sprintf("md_offset %d\nal_offset %d\nbm_offset %d\n\nFound %s\n", l.MDOffset, l.ALOffset, l.BMOffset, fs.Type)
	if l.External {
		return fail(40, "%s\nThis would corrupt existing data.\nIf you want me to do this, you need to zero out the first part\n"+
			"of the device (destroy the content).\nYou should be very sure that you mean it.\nOperation refused.\n", head)
	}
	fsKB, usableKB := (fs.Bytes+1023)>>10, l.DataSize>>10
	if fsKB <= usableKB {
		return nil // drbdmeta asks to confirm; --force (as the agent passes) confirms
	}
	return fail(40, "%s%12d kB data area apparently used\n%12d kB left usable by current configuration\n\n"+
		"Device size would be truncated, which\nwould corrupt data and result in\n'access beyond end of device' errors.\n"+
		"You need to either\n   * use external meta data (recommended)\n   * shrink that filesystem first\n"+
		"   * zero out the device (destroy the filesystem)\nOperation refused.\n", head, fsKB, usableKB)
}

// writeMetadata overwrites the metadata area of l in metaPath: zeroed bitmap
// and activity log and a superblock holding the simulator's marker, the
// metadata magic (drbdmeta.c DRBD_MD_MAGIC_09) and the current UUID. The
// superblock is the simulator's own encoding, not drbdmeta's.
func writeMetadata(metaPath string, l Layout, currentUUID uint64) error {
	f, err := os.OpenFile(metaPath, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	end := l.MDOffset + mdSuperblock
	start := l.BMOffset
	if l.External {
		start = 0
		if fi, err := f.Stat(); err == nil {
			end = fi.Size()
		}
	}
	zeros := make([]byte, 64<<10)
	for off := start; off < end; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), end-off)], off); err != nil {
			return err
		}
	}
	sb := make([]byte, 64)
	copy(sb, "DRBDSIM\x00")
	binary.BigEndian.PutUint32(sb[8:], 0x83740267+6)
	binary.BigEndian.PutUint64(sb[16:], uint64(l.DataSize/512))
	binary.BigEndian.PutUint64(sb[24:], currentUUID)
	_, err = f.WriteAt(sb, l.MDOffset)
	return err
}

// regularSize is the size of path when it is a regular file: the volumes
// the simulator keeps contents for.
func regularSize(path string) (int64, bool) {
	if path == "" {
		return 0, false
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	return fi.Size(), true
}
