// Package vmdisks decides which disks of a KubeVirt VirtualMachine siterecovery
// replicates, and says why a VM cannot be protected when its disks cannot be.
// The protection flow and the ProtectionRequest admission webhook apply these
// rules, so a user meets the same refusal with the same message at admission
// and, for a VM that changed since, in the request's status. It is a library:
// it imports no tier.
package vmdisks
