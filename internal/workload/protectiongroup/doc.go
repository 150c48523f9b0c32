// Package protectiongroup is the workload-cluster ProtectionGroup controller: the
// one place where VM run state changes. It drives every VirtualMachine of a local
// ProtectionGroup towards spec.desiredState and reports status.currentState, which
// the quorum tier waits on during failover. It talks to its own cluster only.
package protectiongroup
