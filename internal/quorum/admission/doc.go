// Package admission holds quorum-manager's validating admission webhooks for
// the kinds of its DR namespace: FailoverRequest, TestFailover,
// ProtectionRequest, ProtectionGroup (its boot plan, networks, drill and
// consistency), ProtectionZone and
// DRPlacementControl. They refuse, with
// a message that says what to fix, what the controllers would otherwise accept
// and fail later: references to objects that do not exist, targets outside the
// zone, destructive requests without confirmation or without the right to make
// them, and kubeconfigs that would open a hole. The checks that need no live
// state are in the CRD schemas; these need the cluster's state. A webhook never
// mutates what a user wrote.
package admission
