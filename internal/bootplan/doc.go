// Package bootplan runs a ProtectionGroup's boot plan: it sorts the group's
// VMs into stages, and from what the cluster shows (each VM's instance, the
// steps' and probes' Jobs) and the last status decides which VMs may run,
// which Jobs must exist and how each stage stands. It is a pure function of
// its input, so the local ProtectionGroup controller and test failover run
// the same plan, and a restarted controller resumes from the status alone.
package bootplan
