// Package protectiongroup is the workload-cluster ProtectionGroup controller: the
// one place where VM run state changes. It drives every VirtualMachine of a local
// ProtectionGroup towards spec.desiredState and reports status.currentState, which
// the quorum tier waits on during failover. It also sets the role the quorum
// tier asks in spec.drbd on the group's DRBDResources, and reports their state
// in status.drbd, so that a failover step writes one object per group across
// sites. It talks to its own cluster only.
package protectiongroup
