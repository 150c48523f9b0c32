// Package mover is a test fixture that plays VolSync's controller and its data
// movers for the RsyncTLS and External (ceph-volsync-plugin) specs, across the
// simulated clusters of one test process. It is never product code.
//
// A ReplicationDestination gets status.rsyncTLS.address, Address(namespace,
// name), which is the service name VolSync exports for it; the mover resolves
// that address to the destination on whichever cluster registered it. A
// ReplicationSource whose spec.trigger.manual differs from
// status.lastManualSync syncs once, provided that its key Secret and the
// destination's hold the same pre-shared key (PSKKey), as VolSync's TLS
// handshake requires; otherwise it fails, naming the missing Secret or the
// mismatch:
//   - RsyncTLS, or External without snapshots: every block of the source PVC;
//   - External with targetSnapshotName: the target snapshot's blocks that differ
//     from baseSnapshotName's, or all of them when the base is empty;
//
// into the destination's PVC (destinationPVC, or volsync-<rd>-dst which it
// creates). With copyMethod Snapshot the destination then snapshots its PVC
// and that snapshot becomes latestImage (the previous one is deleted, unless
// it is marked volsync.backube/do-not-delete). The destination owns its images,
// and the mover plays the garbage collector for them: an unmarked image goes
// with its destination, also one a racing sync made after the deletion; with
// Direct latestImage is the PVC. The source then reports lastManualSync, the
// bytes moved (status.external["bytesTransferred"] and the mover log), and the
// mover records a Transfer. A Fault makes a source fail, or stall after writing
// half of its blocks, until it is cleared.
//
// Failures are reported as VolSync reports them: a failed mover (a Fault, no
// destination at the address, a failed handshake) sets latestMoverStatus
// Failed with its log while Synchronizing stays True (SyncInProgress), and
// the mover runs again after a backoff that doubles up to two seconds; only
// the controller's own errors (the source's key Secret missing) set
// Synchronizing's reason Error.
package mover
