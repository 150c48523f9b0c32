// Package drain tells when a DRBD group's DR replicas hold every write its
// source completed, so that a point cut while the source guests are frozen
// (a test failover's snapshots, a planned failover's stop) is
// application-consistent on the DR side.
//
// Under protocol C a write completes only once the peer has it on its disk,
// so a connected, UpToDate peer with nothing out of sync holds every
// completed write. Under protocol A a write completes once it is handed to
// the network; the peer holds it only when the source's connection shows no
// application write in flight (DRBD's ap-in-flight), nothing pending and
// nothing out of sync. Those figures are statistics DRBD's event stream does
// not send on their own, so each check asks the source's agents for a fresh
// reading (spec.statusRequest) and judges only the answers to it.
package drain
