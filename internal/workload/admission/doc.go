// Package admission holds pg-controller's validating admission webhooks on a
// workload cluster. They keep people, and any identity but siterecovery's own,
// from the direct ways to break replication by hand: starting or deleting the
// standby copy of a protected VM on the cluster where its group is not active
// (one VM running on two sites), putting a second VM on the PVCs of the
// replication stack, and changing, relabelling or deleting the objects the
// replication stack is made of (DRBDResources, frontend, backing and metadata
// PVCs and PVs, the local ProtectionGroup copy, the DRBDAllocation's claims).
// The quorum-manager of a DR namespace passes only for its own DR namespace's
// objects, since several DR namespaces share a cluster. Which identities may
// is configured; the refusal names them.
package admission
