// Package zone is the ProtectionZone controller of quorum-manager: it keeps one
// remote connection per zone cluster in step with the cluster's kubeconfig Secret
// and reports each cluster's reachability as conditions.
package zone
