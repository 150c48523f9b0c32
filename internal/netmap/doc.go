// Package netmap applies a ProtectionZone's or ProtectionGroup's network
// mapping (srv1alpha1.NetworkMapping) to a KubeVirt VM spec, and finds the
// Multus networks a VM would need on a target cluster that are missing there.
// pg-sync applies it to the standby VMs; the ProtectionGroup admission
// webhook and `kubectl siterecovery validate` check with it, so that the user
// reads the same message in both. It is a library: it imports no tier.
package netmap
