// Package krew builds the release archives of kubectl-siterecovery and the
// krew plugin manifest that names them with their real sha256 sums
// (plugins/siterecovery.yaml, written by `make krew-manifest VERSION=...`).
//
// The archives are reproducible: the same commit and Go toolchain give the
// same bytes (-trimpath, no build id, no VCS stamp, fixed tar headers and
// gzip header), so anyone can rebuild a release's archive from its tag and
// check it against the manifest's sum.
package krew
