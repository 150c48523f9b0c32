// Package admission holds pg-controller's validating admission webhooks on a
// workload cluster. They keep people, and any identity but siterecovery's own,
// from the two most direct ways to break replication by hand: starting the
// standby copy of a protected VM on the cluster where its group is not active
// (one VM running on two sites), and changing or deleting the objects the
// replication stack is made of (DRBDResources, frontend and backing PVCs and PVs,
// the local ProtectionGroup copy, the DRBDAllocation's claims). Which identities may is configured; the
// refusal names them.
package admission
