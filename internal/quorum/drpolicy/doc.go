// Package drpolicy is the DRPolicy controller of quorum-manager. It discovers the
// peer classes of a policy from the StorageClasses and
// VolumeGroupReplicationClasses on both of its drClusters, which it reaches only
// through internal/quorum/remote, and writes them to status.peerClasses together with the
// Validated condition. Changes of those classes on either cluster, and changes of
// a cluster's reachability, re-run discovery.
package drpolicy
