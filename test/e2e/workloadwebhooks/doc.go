// Package workloadwebhooks tests pg-controller's admission webhooks end to
// end, called by a real kube-apiserver through the configuration the
// workload-control-plane chart renders: what a namespace admin and each DR
// namespace's quorum identity may and may not do to the objects of a
// protected VM (standbys, DR backing PVCs, DRBD stacks), and that one DR
// namespace's identity cannot act on another's.
//
// Each test starts real kube-apiserver and etcd processes (test/harness) and
// pg-controller's webhook server (internal/workload/admission) in process.
//
// The package holds only tests: it exports nothing, and product code never
// imports it.
package workloadwebhooks
