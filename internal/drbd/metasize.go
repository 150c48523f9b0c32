package drbd

// Layout of DRBD 9 flex-external metadata, as drbd-utils' drbdmeta lays it out
// (user/shared/drbdmeta.c; `drbdmeta ... flex-external create-md` prints the
// offsets): the superblock at 0, the activity log after 4 KiB (32 KiB with the
// default one stripe), and the bitmap from 36 KiB to the end of the device,
// one bit per 4 KiB of data for each peer slot. drbdmeta does not know the
// data device, so the metadata device must be large enough for it: the kernel
// refuses to attach a disk that the bitmap does not cover.
const (
	metaBitmapOffset = 4096 + 32*1024
	bitmapGranule    = 4096    // bytes of data per bitmap bit
	metaAlignment    = 1 << 20 // metadata volumes are provisioned in MiB
)

// ExternalMetaSize is the size of a flex-external metadata device for a data
// device of dataBytes replicated to maxPeers peers (at least 1), rounded up to
// a whole MiB: a storage class provisions no less anyway.
func ExternalMetaSize(dataBytes int64, maxPeers int) int64 {
	peers := int64(max(maxPeers, 1))
	bits := (dataBytes + bitmapGranule - 1) / bitmapGranule
	bitmap := (bits + 7) / 8
	bitmap = (bitmap + 4095) / 4096 * 4096 // drbdmeta keeps each peer's bitmap 4 KiB aligned
	size := metaBitmapOffset + bitmap*peers
	return (size + metaAlignment - 1) / metaAlignment * metaAlignment
}

// ExternalMetaCovers reports the largest data device a flex-external metadata
// device of metaBytes covers for maxPeers peers.
func ExternalMetaCovers(metaBytes int64, maxPeers int) int64 {
	peers := int64(max(maxPeers, 1))
	if metaBytes <= metaBitmapOffset {
		return 0
	}
	perPeer := (metaBytes - metaBitmapOffset) / peers / 4096 * 4096
	return perPeer * 8 * bitmapGranule
}
