// Package crdupgrade holds the test of the CRD upgrade step docs/install.md
// gives (server-side apply of each chart's crds/ folder): on real API servers
// that run the previous release's CRDs, as helm installed them, with objects
// written under the previous schemas, the step's own commands install the
// current CRDs; the objects survive and are served under the new schemas, and
// kinds the release added are served.
package crdupgrade
