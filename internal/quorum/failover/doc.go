// Package failover is the failover-controller of quorum-manager: it executes a
// FailoverRequest for a ProtectionGroup of the DRBD backend — a per-group Lease, stop on the source through the source's
// ProtectionGroup, DRBD demotion and promotion through DRBDResource specs after the
// taint safety check, start on the target through the target's ProtectionGroup —
// and records every step in the request's status, which is the audit trail. Each
// phase is idempotent, so a restarted quorum-manager resumes where it stopped.
//
// The phases follow the reconcile contract of internal/flow: a flow.Runner runs
// them, a wait or a failure is a typed flow error, and the request's flow.Trail
// shows it as every request kind does (Ready=False with a reason and the
// message, which status.message repeats).
//
// A second controller of the package, failover-standdown (standdown.go),
// acts without a request: it stops and demotes a group's copy on a cluster
// that an unplanned failover fenced off, once that cluster answers again.
package failover
