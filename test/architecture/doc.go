// Package architecture holds tests of the repository's shape: which packages each
// binary links. The rule they guard is the product's safety boundary: a
// workload-tier binary (pg-controller, drbd-node-agent) acts only on its own
// cluster, so it must not even link the quorum tier, which is the only code that
// holds other clusters' credentials.
package architecture
