// Package drzone builds the zone the operator-facing tests (the CLI, its
// runbooks and the web console) act on: a three-cluster zone with a protected
// group of running VMs whose disks are PVC-backed on both sides, replicated
// primary -> DR, and the simulators a real zone's storage gives (PVC binding,
// CSI snapshots and restores), so that every action an operator takes —
// failover, test failover, protect — can run to its successful end.
package drzone
