// Package claimgc releases the DRBD port and minor claims that no
// quorum-manager can release any more: those of a DR namespace that no longer
// exists on this workload cluster.
//
// A claim in the cluster's DRBDAllocation is normally released by the
// quorum-manager of the claim's DR namespace, when its ProtectionRequest is
// deleted. If that quorum-manager is uninstalled first, or the requests'
// finalizers are forced off, nobody judges those claims again and their ports
// and minors stay taken forever. The DR namespace of the quorum cluster has a
// namespace of the same name here: it holds the ProtectionGroup copies and the
// quorum-manager's ServiceAccount. Once that namespace is gone or terminating,
// its quorum-manager can no longer work on this cluster, so its claims are
// orphans. A claim is released only when, in addition, no DRBDResource on this
// cluster uses its port or any of its minors (two VMs must never share them)
// and it is older than a grace period (a claim is written a moment before the
// objects that use it). It runs in pg-controller and talks to its own cluster
// only.
package claimgc
