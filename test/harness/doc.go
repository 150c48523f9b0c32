// Package harness starts throw-away Kubernetes control planes for integration tests.
//
// A Zone is a set of named clusters (typically "quorum", "primary" and "dr"), each a real
// etcd plus kube-apiserver started by controller-runtime's envtest, all started in
// parallel. Every cluster gets the CRDs of the given directories installed, an admin
// client, and a self-contained kubeconfig (embedded client certificate) that can be put
// into a Secret so that a controller in another cluster can reach it.
//
// A cluster's kube-apiserver can be stopped and started again on the same address with
// the same certificates and the same etcd data, which simulates a site outage.
//
// The binaries are found through KUBEBUILDER_ASSETS or the cache folder filled by
// `make kube-binaries` (scripts/dev/kube-binaries.sh); see BinaryDir.
package harness
