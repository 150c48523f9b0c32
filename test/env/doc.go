// Package env builds whole DR zones for integration tests: a quorum, a primary
// and a DR cluster (real API servers from the harness), the DR namespace on each,
// kubeconfig Secrets and a ProtectionZone on the quorum cluster, and in-process
// managers for the workload tier (pg-controller with the KubeVirt simulator) and
// the quorum tier (quorum-manager), each of which can be stopped and restarted.
// With SITERECOVERY_CHART_RBAC set, those managers run under the service
// accounts and roles the charts install (chartrbac.go).
package env
