// Package mover is a test fixture that plays VolSync's controller and its data
// movers for the RsyncTLS and External (ceph-volsync-plugin) specs, across the
// simulated clusters of one test process. It is never product code.
//
// A ReplicationDestination publishes status.rsyncTLS.address, a simulated
// ClusterIP of its Service (new when the destination is recreated), and a
// source reaches it there; its clusterset name, ClusterSetAddress, answers
// only while a ServiceExport (multicluster.x-k8s.io/v1alpha1) named like its
// Service, ServiceName, exists on its cluster. Any other address does not
// answer.
//
// A ReplicationSource whose spec.trigger.manual differs from
// status.lastManualSync syncs once, provided that its key Secret and the
// destination's hold the same pre-shared key (PSKKey), as VolSync's TLS
// handshake requires, and that its PVC and the destination's have the same
// volumeMode, as VolSync's movers copy a block device only into a block
// device and files only into a file system; otherwise it fails, naming the
// missing Secret or the mismatch:
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
// destination at the address, a failed handshake, a volumeMode mismatch) sets latestMoverStatus
// Failed with its log while Synchronizing stays True (SyncInProgress), and
// the mover runs again after a backoff that doubles up to two seconds; only
// the controller's own errors (the source's key Secret missing) set
// Synchronizing's reason Error.
package mover
