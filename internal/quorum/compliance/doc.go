// Package compliance exports the compliance report (internal/report) of
// quorum-manager's DR namespace as Prometheus metrics, per ProtectionGroup:
// the share of a window (--rpo-compliance-window) the RPO objective was met,
// when a drill last passed, whether the group has a drill schedule, and the
// measured RTO of its last failover and last drill.
//
// The metrics are computed when Prometheus scrapes, from the manager's cache
// (the same objects the controllers watch), so a deleted group's series go
// with it and there is no timer to keep; each group has at most one series of
// each metric.
package compliance
