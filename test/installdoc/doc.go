// Package installdoc holds the test of docs/install.md: on three real API
// servers with nothing installed, it runs the page's commands as written,
// extracted from its code blocks (helm installs of the three charts, then
// scripts/bootstrap-zone.sh), with the binaries of the charts' pods running as
// processes of the test under the identities the charts created. It checks
// that what the page says is there is there, and that quorum-manager reaches
// both workload clusters through the least-privilege kubeconfigs the
// bootstrap stored, so that the page cannot rot.
package installdoc
