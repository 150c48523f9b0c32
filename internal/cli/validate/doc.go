// Package validate checks what breaks DR before it is needed: the zone's
// kubeconfig Secrets, each cluster's reachability and the permissions of the
// identity in its Secret, CRD versions, the DRBD agents, DRBD connections,
// lost-quorum taints, the standby VMs, each group's boot plan against its
// VMs, VolumeSnapshotClasses for test failover, clock skew and the RPO. Each check scores ok, warning or problem
// and says what to do. It only reads.
package validate
