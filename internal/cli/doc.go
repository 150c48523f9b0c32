// Package cli is the operator command line, `kubectl siterecovery`: status,
// failover, failback, test-failover, protect, unprotect, validate, report
// (RPO compliance, drills and measured RTO, from internal/report) and gather.
//
// It talks to the quorum cluster with the standard kubeconfig flags and reaches
// the workload clusters only through the zone's kubeconfig Secrets, parsed by
// the same rules quorum-manager applies (internal/kubeconfig.RESTConfig).
// Where the user may not read those Secrets it says so and shows what the
// quorum cluster records instead. It writes requests (FailoverRequest,
// TestFailover, ProtectionRequest) and never changes a VM, a taint or a DRBD
// resource itself: the controllers do, under their safety checks.
package cli
