// Package pgsync is the pg-sync-controller of quorum-manager. For every quorum
// copy of a ProtectionGroup it keeps a workload copy on each cluster of the
// group's ProtectionZone (spec.virtualMachines, spec.replication, spec.boot and
// spec.consistency, written by server-side apply; spec.desiredState only when
// the copy is created), carries the newest replication point a copy records
// (a VolSync cycle's) into status.consistency.lastPoint, builds
// the Halted standby VirtualMachines on every cluster other than the active one
// from the active cluster's VMs (DataVolume volumes become PVC volumes, orphaned
// dataVolumeTemplates are dropped), and reports per cluster whether it is in sync
// in the quorum copy's status. It reaches workload clusters only through
// internal/quorum/remote and never changes a VM on the active cluster or a VM that runs.
//
// Cleanup. A standby pg-sync creates carries CreatedByLabel besides its group
// labels; the labels alone do not prove it, since pg-sync also labels a VM it
// finds in place (the original VM on the primary while the group is failed
// over). Only VMs with that label are ever deleted, and only on a non-active
// cluster while halted and not running:
//
//   - a VM that leaves spec.virtualMachines loses its standby on every
//     non-active cluster; a standby that runs is reported as drift and deleted
//     once it is halted;
//   - a deleted quorum group (Finalizer, added before any copy exists) loses its
//     standbys and then its workload copy on every zone cluster; the active
//     cluster's VMs stay, running as they are. A cluster that cannot be reached
//     holds the finalizer with Synced=False and its reason until it answers; a
//     deleted zone releases it with a Warning event, as nothing can be reached.
package pgsync
