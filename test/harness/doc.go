// Package harness starts throw-away Kubernetes control planes for integration tests.
//
// A Zone is a set of named clusters (typically "quorum", "primary" and "dr"), each a real
// etcd plus kube-apiserver started by controller-runtime's envtest, all started in
// parallel. Every cluster gets the CRDs of the given directories installed, an admin
// client, and a self-contained kubeconfig (embedded client certificate) that can be put
// into a Secret so that a controller in another cluster can reach it.
//
// With Options.ControlPlane a cluster is a whole control plane: kube-controller-manager
// and kube-scheduler beside the API server, and kwok playing three nodes in two zones
// (DefaultNodes) with their pods' lifecycle, and every admission plugin a kubeadm cluster
// enables plus OwnerReferencesPermissionEnforcement (admission.go). A bare cluster (the
// default) runs the same admission plugins but for three that only a controller manager
// completes, each with its reason in bareAPIServerOff; PodSecurity enforces baseline by
// default on both. TestControlPlane checks what the full control plane does that a bare
// API server does not.
//
// Which tests run on the full control plane: the sandbox; the flows' main
// end-to-end tests, through test/env's Options.ControlPlane (protection's
// TestProtectionFlow, failover's TestPlannedFailoverAndFailback, the test
// failover's TestTestFailover, with or without SITERECOVERY_CHART_RBAC); the
// install-doc test (TestInstallDoc); and the simulators' tests of what only
// it does (VMIs in launcher pods, WaitForFirstConsumer binding). There the
// product meets what a real cluster does to it: scheduling, the PV binder,
// pvc-protection, garbage collection, PodSecurity and owner-reference rights.
// Every narrower integration test keeps the bare API server (with
// kube-scheduler where its pods must be placed): it exercises one
// controller's decisions, to which kube-controller-manager and kwok on every
// cluster add start-up time and CPU on the shared CI machine but nothing the
// test checks.
//
// A cluster's etcd starts on a copy of an etcd template (template.go): the data of a
// stopped cluster that has the same CRDs and admission policies installed and the
// API server's bootstrap objects written, built once per content and shared by the
// test processes of a run. That halves kube-apiserver's CPU at start
// (BenchmarkClusterStart), which is most of what a test costs the shared CI machine.
//
// A cluster's kube-apiserver can be stopped and started again on the same address with
// the same certificates and the same etcd data, which simulates a site outage.
//
// The binaries are found through KUBEBUILDER_ASSETS or the cache folder filled by
// `make kube-binaries` (hack/kube-binaries.sh), see BinaryDir, and kwok in the one
// `make kwok` fills, see KwokDir.
package harness
