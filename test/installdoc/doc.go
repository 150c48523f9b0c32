// Package installdoc holds the test of docs/install.md: on three real API
// servers with nothing installed, it runs the page's commands as written,
// extracted from its code blocks (helm installs of the three charts, then
// scripts/bootstrap-zone.sh, then step 6's kubectl siterecovery commands,
// the plugin being the test binary), with the controllers of the charts' pods
// running in the test process under the identities the charts created. It
// checks that what the page says is there is there, that quorum-manager
// reaches both workload clusters through the least-privilege kubeconfigs the
// bootstrap stored, and that step 6 ends with apps/web Protected, so that the
// page cannot rot.
package installdoc
