// Package v1alpha1 holds the siterecovery.trilio.io/v1alpha1 API: the quorum-tier
// resources that describe a DR deployment (ProtectionZone, ProtectionGroup,
// ProtectionRequest, FailoverRequest, TestFailover, ReplicationGroupStatus, RPOEvent)
// and the workload-tier resources (the local ProtectionGroup copy and DRBDResource).
//
// +kubebuilder:object:generate=true
// +groupName=siterecovery.trilio.io
package v1alpha1
