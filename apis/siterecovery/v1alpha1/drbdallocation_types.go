package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// DRBDAllocationName is the name of the one DRBDAllocation of a workload
// cluster.
const DRBDAllocationName = "default"

// DRBDClaim is the DRBD replication port and minors one ProtectionRequest holds
// on a workload cluster.
type DRBDClaim struct {
	// RequestUID is the uid of the ProtectionRequest on the quorum cluster; it
	// keys the claim, so a quorum-manager that crashed after claiming finds and
	// reuses its own claim instead of taking another.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	RequestUID string `json:"requestUID"`
	// DRNamespace is the DR namespace of the quorum cluster the request lives
	// in; only that namespace's quorum-manager releases the claim.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	DRNamespace string `json:"drNamespace"`
	// Request is the ProtectionRequest's name, for people reading the claim.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Request string `json:"request,omitempty"`
	// Port is the TCP replication port, the same on both replicas.
	// +kubebuilder:validation:Minimum=7000
	// +kubebuilder:validation:Maximum=7999
	Port int32 `json:"port"`
	// Minors are the DRBD minors, one per volume, the same on both replicas.
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	Minors []int32 `json:"minors,omitempty"`
	// ClaimedAt is when the claim was written; an orphaned claim (its request
	// is gone) is dropped only when it is older than the list of requests that
	// shows it orphaned.
	ClaimedAt metav1.Time `json:"claimedAt"`
}

// DRBDAllocationSpec holds every claim on the cluster.
type DRBDAllocationSpec struct {
	// Claims are unique by requestUID; no two claims hold the same port or
	// minor.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=map
	// +listMapKey=requestUID
	// +optional
	Claims []DRBDClaim `json:"claims,omitempty"`
}

// DRBDAllocation records which DRBD replication ports and minors are taken on a
// workload cluster, and by which ProtectionRequest of which DR namespace. Every
// quorum-manager that replicates to the cluster, whatever its DR namespace,
// claims here before it creates a DRBDResource, with an update that carries the
// resourceVersion: a writer that lost a race gets a conflict, reads again and
// picks another port. One object per cluster, named DRBDAllocationName; the
// first quorum-manager to claim creates it.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=drbdalloc
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DRBDAllocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DRBDAllocationSpec `json:"spec,omitempty"`
}

// DRBDAllocationList contains a list of DRBDAllocation.
// +kubebuilder:object:root=true
type DRBDAllocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DRBDAllocation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DRBDAllocation{}, &DRBDAllocationList{})
}
