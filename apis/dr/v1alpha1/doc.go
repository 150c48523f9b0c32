// Package v1alpha1 holds the dr.siterecovery.trilio.io/v1alpha1 API used by the
// Offloaded and VolSync backends: DRPolicy and DRPlacementControl on the quorum
// cluster, VolumeReplicationGroup, ReplicationGroupSource and
// ReplicationGroupDestination on the workload clusters. Field names follow Ramen's
// so that the global-VGR and incremental-sync specifications apply verbatim.
//
// +kubebuilder:object:generate=true
// +groupName=dr.siterecovery.trilio.io
package v1alpha1
