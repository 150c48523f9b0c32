// Package report is the compliance report of a DR namespace: for each
// ProtectionGroup over a window, the share of time its replication lag was
// within the RPO objective and its worst breach episode, its last drill
// (a scheduled or manual TestFailover) with each check's verdict, and the
// measured recovery time (RTO) of its last failover and of its last drill.
//
// Build is a pure function of API objects the caller has read (groups,
// RPOEvents, TestFailovers, FailoverRequests, DRPlacementControls), the
// window and the time, so the CLI, the console and quorum-manager's metrics
// compute the same figures from the same objects, and unit tests pin them
// exactly. It links no controller and no client.
package report
