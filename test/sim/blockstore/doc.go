// Package blockstore is a test fixture that keeps the data of simulated volumes
// and snapshots, so that tests of data replication can check contents by
// checksum instead of trusting status fields. It is never product code.
//
// An image is a volume or a snapshot, named by a handle (for volumes the PV
// name, for snapshots the snapshot handle). Every image of a store has the same
// number of fixed-size blocks; a block holds one 64-bit value standing for its
// contents. An image nobody wrote reads as zeros, as a thin-provisioned volume
// does. Snapshots and restores are copies; Sync moves blocks between images the
// way a data mover does (all of them, or only those that differ between a base
// and a target) and reports the bytes it moved.
package blockstore
