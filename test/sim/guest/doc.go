// Package guest is a test fixture that plays the operating system inside
// simulated KubeVirt VMs, so that integration tests can prove a DR flow lost
// no data by reading bytes back, not by trusting counters. Product code never
// imports it.
//
// Guests.Write makes a VM that runs on a cluster write numbered 4 KiB blocks to
// its disks: the VM's PVC-backed volumes (a persistentVolumeClaim or a
// dataVolume, whose PVC has its name), each resolved PVC → bound PV → bytes.
// A CSI PV of the storage simulator (test/sim/storage with Options.DeviceDir)
// keeps its bytes in the sparse file storage.DeviceFile(deviceDir, pvName); a
// local PV whose path is /dev/drbd<minor> is read and written through the DRBD
// simulator (the DRBD interface) on the node the PV's node affinity names (the
// Node whose kubernetes.io/hostname label that is, if there is one), or the
// node of the VMI when it names none.
//
// A disk is as large as the guest believes: the PVC's status.capacity, else
// its request. Writes alternate between the disks; on each disk the first
// write goes to the disk's last block (where a wrong DRBD metadata layout
// destroys data), the second to its first block, and the following ones visit
// every other block once, spread over the whole disk, before the disk wraps
// around and blocks are overwritten. A block holds a magic, the VM, the disk,
// the write's sequence number and the block index, filler derived from them
// and a SHA-256 of the rest, so that a reader tells the latest acknowledged
// write (intact) from an older write of the VM or zeros (lost) and anything
// else (corrupt).
//
// A write is acknowledged only when the device write returned nil. The first
// refused write (a DRBD I/O error, or a block beyond the end of a device
// smaller than its PVC) ends the batch with an *IOError (errors.Is ErrIO).
// Each VM has one log of acknowledged writes, shared by every cluster: the DR
// copy of a VM boots from the replica of the same disks, so Guests.Verify on
// the DR cluster checks the writes acknowledged on the primary. Verify reads
// every disk whole for its checksum, so test disks should be small (MiBs).
//
// A Write batch is one record of the guest's application. Freeze and Thaw are
// what the guest agent does for KubeVirt's freeze subresource (test/sim/virtapi
// calls them): a freeze waits for the record being written, and later batches
// wait until the thaw; a guest whose agent does not answer (SetAgent) refuses
// both. CheckImage reads a copy of a disk, as a snapshot holds it, and counts
// the records it holds whole and torn (partly written).
package guest
