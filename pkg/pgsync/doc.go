// Package pgsync is the pg-sync-controller of quorum-manager. For every quorum
// copy of a ProtectionGroup it keeps a workload copy on each cluster of the
// group's ProtectionZone (spec.virtualMachines and spec.replication, written by
// server-side apply; spec.desiredState only when the copy is created), builds
// the Halted standby VirtualMachines on every cluster other than the active one
// from the active cluster's VMs (DataVolume volumes become PVC volumes, orphaned
// dataVolumeTemplates are dropped), and reports per cluster whether it is in sync
// in the quorum copy's status. It reaches workload clusters only through
// pkg/remote and never changes a VM on the active cluster or a VM that runs.
package pgsync
