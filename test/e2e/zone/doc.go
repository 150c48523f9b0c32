// Package zone tests quorum-manager's ProtectionZone controller end to end:
// each cluster's reachability through the zone's kubeconfig Secrets, followed
// across API server outages and Secret changes, and a cluster down at start
// connected once it returns.
//
// Each test starts real kube-apiserver and etcd processes (test/harness) and
// the zone controller (internal/quorum/zone) in process.
//
// The package holds only tests: it exports nothing, and product code never
// imports it.
package zone
