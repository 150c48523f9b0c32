package v1alpha1

// MACPolicy says what a standby VM's interfaces do with the MAC addresses of
// the source VM.
// +kubebuilder:validation:Enum=Keep;Generate
type MACPolicy string

const (
	// MACPolicyKeep copies each interface's macAddress as the source VM has
	// it; an interface whose MAC a Generate mapping dropped on the VM's way to
	// the source cluster gets back the MAC it had before
	// (OriginalNetworksAnnotation), so that failback restores the primary's
	// MACs.
	MACPolicyKeep MACPolicy = "Keep"
	// MACPolicyGenerate drops each interface's macAddress, so that KubeVirt on
	// the target assigns a new one (a MAC must not appear twice on one L2
	// segment when both sites share it, as during a test failover).
	MACPolicyGenerate MACPolicy = "Generate"
)

// OriginalNetworksAnnotation is set on the template of a standby VM whose
// networks or interfaces a mapping changed (a Multus network renamed, the pod
// network replaced, a MAC dropped): for each changed network, by name, the
// network and interface the source had and what the mapping made of the
// network, as JSON. On the way back each one comes back unless the reverse
// pair maps that network itself; a MAC comes back unless it is Generate.
// pg-sync writes it; it is part of the template pg-sync owns.
const OriginalNetworksAnnotation = "siterecovery.trilio.io/original-networks"

// OriginalMACsAnnotation is the MAC-only record (a JSON object of interface
// name to MAC) that earlier versions wrote instead of
// OriginalNetworksAnnotation; pg-sync still reads it and restores those MACs,
// and writes OriginalNetworksAnnotation in its place.
const OriginalMACsAnnotation = "siterecovery.trilio.io/original-macs"

// NetworkMapping maps the networks of VMs running on sourceCluster to the
// networks standby VMs use on targetCluster. It is per ordered pair: failback
// from targetCluster to sourceCluster uses the entry of the reverse pair, as
// the two sites' networks need not map one to one.
// +kubebuilder:validation:XValidation:rule="self.sourceCluster != self.targetCluster",message="sourceCluster and targetCluster must differ"
type NetworkMapping struct {
	// sourceCluster is the zone cluster the VMs run on.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	SourceCluster string `json:"sourceCluster"`

	// targetCluster is the zone cluster whose standby VMs get the mapped
	// networks.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	TargetCluster string `json:"targetCluster"`

	// networks map Multus NetworkAttachmentDefinitions of sourceCluster to
	// those of targetCluster. A network a VM uses that no entry names keeps
	// its name.
	// +optional
	// +listType=map
	// +listMapKey=source
	// +kubebuilder:validation:MaxItems=64
	Networks []MultusNetworkMap `json:"networks,omitempty"`

	// podNetwork, when set, is the Multus NetworkAttachmentDefinition
	// ("namespace/name", or "name" in the VM's namespace) that replaces the
	// pod network on targetCluster, as the VM's default network; a masquerade
	// interface on it becomes a bridge interface (KubeVirt allows masquerade
	// on the pod network only). The way back (the reverse pair) gives the VM
	// its pod network and interface back unless its networks map this
	// network. Unset, the pod network is kept.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-.a-z0-9]*[a-z0-9])?$`
	PodNetwork string `json:"podNetwork,omitempty"`

	// macPolicy is Keep (copy the source's MAC addresses) or Generate (drop
	// them so that KubeVirt on targetCluster assigns new ones).
	// +optional
	// +kubebuilder:default=Keep
	MACPolicy MACPolicy `json:"macPolicy,omitempty"`
}

// MultusNetworkMap maps one NetworkAttachmentDefinition. Names are
// "namespace/name", or "name" for the one in the VM's namespace, as in a
// KubeVirt VM's spec.template.spec.networks[].multus.networkName.
type MultusNetworkMap struct {
	// source is the network's name as the VM on sourceCluster names it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-.a-z0-9]*[a-z0-9])?$`
	Source string `json:"source"`

	// target is the NetworkAttachmentDefinition on targetCluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-.a-z0-9]*[a-z0-9])?$`
	Target string `json:"target"`
}

// NetworkMappingFor returns the mapping for VMs moving from source to target:
// the group's entry for that pair when it has one (it replaces the zone's
// whole), else the zone's, else nil (networks and MACs kept).
func NetworkMappingFor(group, zone []NetworkMapping, source, target string) *NetworkMapping {
	for _, list := range [][]NetworkMapping{group, zone} {
		for i := range list {
			if list[i].SourceCluster == source && list[i].TargetCluster == target {
				return &list[i]
			}
		}
	}
	return nil
}
