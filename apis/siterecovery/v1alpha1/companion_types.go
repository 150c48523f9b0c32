package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CompanionObjects are the objects beside a group's VMs that the VMs need on
// the cluster that takes the group over: pg-sync keeps copies of them on every
// zone cluster other than the active one, so a failover finds them in place.
// +kubebuilder:validation:XValidation:rule="!has(self.overrides) || self.overrides.all(o, o.kind != 'Secret')",message="a Secret takes no override: its values would sit in the group's spec"
type CompanionObjects struct {
	// objects name the companions, by name or label selector, in the
	// namespaces of the group's VMs.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Objects []CompanionSelector `json:"objects,omitempty"`

	// copySecrets lets pg-sync copy the Secrets objects name. Unset, a Secret
	// entry is reported Refused and nothing of it is read.
	// +optional
	CopySecrets bool `json:"copySecrets,omitempty"`

	// overrides are the values that differ on one cluster: each is a JSON
	// merge patch applied to the copy pg-sync writes there, after the copy is
	// built from the source (a Service's loadBalancerIP or annotations, a
	// ConfigMap key's value). A Secret takes none.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Overrides []CompanionOverride `json:"overrides,omitempty"`
}

// CompanionKind is a kind of object a group may name as a companion.
// +kubebuilder:validation:Enum=ConfigMap;Secret;Service;VirtualMachineInstancetype;VirtualMachinePreference
type CompanionKind string

const (
	// CompanionConfigMap is a core/v1 ConfigMap.
	CompanionConfigMap CompanionKind = "ConfigMap"
	// CompanionSecret is a core/v1 Secret (copied only with copySecrets).
	CompanionSecret CompanionKind = "Secret"
	// CompanionService is a core/v1 Service, copied without its allocated
	// cluster IPs and node ports.
	CompanionService CompanionKind = "Service"
	// CompanionInstancetype is a namespaced KubeVirt
	// VirtualMachineInstancetype (cluster-scoped ones are the administrator's).
	CompanionInstancetype CompanionKind = "VirtualMachineInstancetype"
	// CompanionPreference is a namespaced KubeVirt VirtualMachinePreference.
	CompanionPreference CompanionKind = "VirtualMachinePreference"
)

// CompanionKinds are the companion kinds, in a fixed order.
var CompanionKinds = []CompanionKind{
	CompanionConfigMap, CompanionSecret, CompanionService, CompanionInstancetype, CompanionPreference,
}

// GroupVersionKind is the API kind of k; empty for an unknown kind. The
// instancetypes are KubeVirt's namespaced ones (kubevirt
// api/instancetype/v1beta1); the cluster-scoped kinds are the
// administrator's.
func (k CompanionKind) GroupVersionKind() schema.GroupVersionKind {
	switch k {
	case CompanionConfigMap, CompanionSecret, CompanionService:
		return schema.GroupVersionKind{Version: "v1", Kind: string(k)}
	case CompanionInstancetype, CompanionPreference:
		return schema.GroupVersionKind{Group: "instancetype.kubevirt.io", Version: "v1beta1", Kind: string(k)}
	}
	return schema.GroupVersionKind{}
}

// CompanionSelector names companions of one kind in one namespace.
// +kubebuilder:validation:XValidation:rule="has(self.name) != has(self.selector)",message="set exactly one of name and selector"
type CompanionSelector struct {
	// kind of the objects.
	// +required
	Kind CompanionKind `json:"kind"`
	// namespace of the objects: a namespace of the group's VMs.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// name of one object.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
	// selector picks the objects of the kind in the namespace by label.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// CompanionOverride is a change pg-sync makes to one companion's copy on one
// cluster.
type CompanionOverride struct {
	// kind of the object.
	// +required
	Kind CompanionKind `json:"kind"`
	// namespace of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// cluster is the zone cluster whose copy takes the patch.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster"`
	// mergePatch is a JSON merge patch (RFC 7386) of the copy, e.g.
	// {"data": {"DB_HOST": "db.dr.example"}} or {"spec": {"loadBalancerIP":
	// "10.2.0.9"}}. It cannot rename the copy or remove pg-sync's labels.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	MergePatch runtime.RawExtension `json:"mergePatch"`
}

// CompanionState is how one companion stands on one cluster.
// +kubebuilder:validation:Enum=InSync;Conflict;MissingAtSource;Refused;Failed
type CompanionState string

const (
	// CompanionInSync means the copy matches the source and its overrides.
	CompanionInSync CompanionState = "InSync"
	// CompanionConflict means an object of that name exists on the cluster
	// that pg-sync did not create; it is left as it is.
	CompanionConflict CompanionState = "Conflict"
	// CompanionMissingAtSource means a named object does not exist on the
	// active cluster.
	CompanionMissingAtSource CompanionState = "MissingAtSource"
	// CompanionRefused means the group may not have it copied: a Secret
	// without copySecrets, or a namespace none of the group's VMs is in.
	CompanionRefused CompanionState = "Refused"
	// CompanionFailed means the copy could not be written (the message says
	// why, never a Secret's data).
	CompanionFailed CompanionState = "Failed"
)

// CompanionStatus is one companion on one cluster.
type CompanionStatus struct {
	// kind of the object.
	// +required
	Kind CompanionKind `json:"kind"`
	// namespace of the object.
	// +required
	Namespace string `json:"namespace"`
	// name of the object; empty for a selector that matched nothing.
	// +optional
	Name string `json:"name,omitempty"`
	// cluster the copy is on (empty for a problem at the source).
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// state of the copy.
	// +required
	State CompanionState `json:"state"`
	// message explains a state other than InSync. It never holds a
	// Secret's data.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`
}
