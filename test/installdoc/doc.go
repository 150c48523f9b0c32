// Package installdoc holds the test of docs/install.md: on three real API
// servers with nothing installed, it runs the page's commands as written,
// extracted from its code blocks (helm installs of the three charts, then
// scripts/bootstrap-zone.sh, then step 6's kubectl siterecovery commands,
// the plugin being the test binary). The charts' pods then run as a node
// would run them, but as processes of this machine: quorum-manager (and its
// --zone-webhook mode), pg-controller and drbd-node-agent, built by the
// test, each with the args and env of its container as helm installed its
// Deployment or DaemonSet, only its own folders and ports changed, and a
// kubeconfig holding a token of the ServiceAccount its pod runs as. The
// clusters are whole control planes (kube-controller-manager, kube-scheduler,
// kwok's nodes, a kubeadm cluster's admission plugins). The simulators of
// KubeVirt (launcher pods) and the storage run in the test process; drbdsim
// stands in for drbdadm and drbdsetup. The test checks that
// what the page says is there is there, that quorum-manager reaches both
// workload clusters through the least-privilege kubeconfigs the bootstrap
// stored, that step 6 ends with apps/web Protected, and that no process
// ended or logged a token, so that the page cannot rot.
package installdoc
