package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// StorageBackend is how a zone replicates data between its clusters.
// +kubebuilder:validation:Enum=DRBD;Offloaded;VolSync
type StorageBackend string

const (
	// BackendDRBD replicates each protected VM disk with DRBD between the
	// drbd-node-agents of the primary and DR clusters.
	BackendDRBD StorageBackend = "DRBD"
	// BackendOffloaded leaves replication to the storage array, driven through
	// csi-addons VolumeGroupReplication and the DRPlacementControl state machine.
	BackendOffloaded StorageBackend = "Offloaded"
	// BackendVolSync replicates CephFS consistency groups with VolSync movers.
	BackendVolSync StorageBackend = "VolSync"
)

// ClusterRole is the role a workload cluster was installed for. The cluster a
// group runs on at any moment is ProtectionGroup.spec.activeCluster.
// +kubebuilder:validation:Enum=Primary;DR
type ClusterRole string

const (
	// ClusterRolePrimary is the cluster applications normally run on.
	ClusterRolePrimary ClusterRole = "Primary"
	// ClusterRoleDR is the recovery site.
	ClusterRoleDR ClusterRole = "DR"
)

// SecretKeyReference names a key of a Secret in the zone's namespace.
type SecretKeyReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key in the Secret that holds the kubeconfig.
	// +optional
	// +kubebuilder:default=kubeconfig
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key,omitempty"`
}

// ClientSettings bounds how hard quorum-manager talks to one workload cluster.
type ClientSettings struct {
	// qps is the sustained request rate allowed to this cluster.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	QPS int32 `json:"qps,omitempty"`

	// burst is the short-term request burst allowed to this cluster.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2000
	Burst int32 `json:"burst,omitempty"`

	// timeoutSeconds bounds each request to this cluster.
	// +optional
	// +kubebuilder:default=15
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
}

// ZoneCluster is one workload cluster of a zone.
type ZoneCluster struct {
	// name identifies the cluster inside the zone; requests name it as their target.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// role the cluster was installed for.
	// +required
	Role ClusterRole `json:"role"`

	// kubeconfigSecretRef names the Secret with a kubeconfig for this cluster. Exec
	// and auth-provider kubeconfigs are refused: use a token or client certificate.
	// +required
	KubeconfigSecretRef SecretKeyReference `json:"kubeconfigSecretRef"`

	// client bounds the request rate and timeout used against this cluster.
	// +optional
	Client ClientSettings `json:"client,omitempty"`
}

// StorageMapping says which StorageClass on the DR side backs a replica of a disk
// whose PVC uses a given StorageClass on the primary side.
type StorageMapping struct {
	// sourceStorageClass is the StorageClass of the VM's PVC on the primary cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	SourceStorageClass string `json:"sourceStorageClass"`

	// targetStorageClass is the StorageClass for the replica's backing PVC on the DR
	// cluster. It must provide volumeMode Block.
	// +required
	// +kubebuilder:validation:MinLength=1
	TargetStorageClass string `json:"targetStorageClass"`
}

// ProtectionZoneSpec defines the boundary of one DR deployment.
// +kubebuilder:validation:XValidation:rule="self.clusters.exists_one(c, c.role == 'Primary')",message="clusters must contain exactly one cluster with role Primary"
// +kubebuilder:validation:XValidation:rule="self.clusters.exists(c, c.role == 'DR')",message="clusters must contain at least one cluster with role DR"
// +kubebuilder:validation:XValidation:rule="!has(self.networkMappings) || self.networkMappings.all(m, self.clusters.exists(c, c.name == m.sourceCluster) && self.clusters.exists(c, c.name == m.targetCluster))",message="networkMappings may name only clusters of spec.clusters"
type ProtectionZoneSpec struct {
	// displayName is a human-readable name for dashboards.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	DisplayName string `json:"displayName,omitempty"`

	// description says what this zone protects.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`

	// storageBackend is how data is replicated. It cannot change once set.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="storageBackend is immutable; create a new ProtectionZone"
	StorageBackend StorageBackend `json:"storageBackend"`

	// clusters are the workload clusters of the zone: one Primary and its DR peers.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=8
	Clusters []ZoneCluster `json:"clusters"`

	// storageMappings map primary StorageClasses to DR StorageClasses (DRBD backend).
	// +optional
	// +listType=map
	// +listMapKey=sourceStorageClass
	// +kubebuilder:validation:MaxItems=64
	StorageMappings []StorageMapping `json:"storageMappings,omitempty"`

	// networkMappings map the networks of VMs on one cluster to those of
	// their standbys on another, per ordered pair of clusters, with the MAC
	// policy. A group may replace a pair's entry in its own spec.
	// +optional
	// +listType=map
	// +listMapKey=sourceCluster
	// +listMapKey=targetCluster
	// +kubebuilder:validation:MaxItems=56
	NetworkMappings []NetworkMapping `json:"networkMappings,omitempty"`

	// drbd holds DRBD options of the zone's replicas (DRBD backend), such as
	// TLS on the replication link.
	// +optional
	DRBD *ZoneDRBDSettings `json:"drbd,omitempty"`
}

// ClusterStatus is what quorum-manager last observed of one workload cluster.
type ClusterStatus struct {
	// name of the cluster, as in spec.clusters.
	// +required
	Name string `json:"name"`

	// serverVersion is the Kubernetes version the cluster's API server reported.
	// +optional
	ServerVersion string `json:"serverVersion,omitempty"`

	// lastProbeTime is when the API server last answered the health probe.
	// +optional
	LastProbeTime *metav1.Time `json:"lastProbeTime,omitempty"`

	// conditions of the connection, among them Reachable.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ProtectionZoneStatus is the observed state of a ProtectionZone.
type ProtectionZoneStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// clusters holds the per-cluster connection state.
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []ClusterStatus `json:"clusters,omitempty"`

	// conditions of the zone as a whole; Ready is True when every cluster is reachable.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ProtectionZone is the boundary of a DR deployment: which clusters take part, how
// they replicate, and how quorum-manager reaches them.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pz
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.storageBackend`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProtectionZone struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired zone.
	// +required
	Spec ProtectionZoneSpec `json:"spec"`
	// status is the observed zone.
	// +optional
	Status ProtectionZoneStatus `json:"status,omitempty"`
}

// ProtectionZoneList is a list of ProtectionZones.
// +kubebuilder:object:root=true
type ProtectionZoneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProtectionZone `json:"items"`
}

// MappedStorageClass returns the DR StorageClass that spec.storageMappings
// names for a primary StorageClass; an empty class has no mapping.
func (z *ProtectionZone) MappedStorageClass(source string) (string, bool) {
	for _, m := range z.Spec.StorageMappings {
		if source != "" && m.SourceStorageClass == source {
			return m.TargetStorageClass, true
		}
	}
	return "", false
}

func init() {
	SchemeBuilder.Register(&ProtectionZone{}, &ProtectionZoneList{})
}
