package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// LocalObjectReference names an object in the same namespace as the referrer.
type LocalObjectReference struct {
	// name of the referenced object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ProtectionGroupReference names a ProtectionGroup in the DR namespace.
type ProtectionGroupReference struct {
	// name of the ProtectionGroup.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// namespace of the ProtectionGroup. Defaults to the namespace of the referrer and
	// must equal it when set: a DR namespace only drives its own groups.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// VirtualMachineReference names a KubeVirt VirtualMachine on a workload cluster.
type VirtualMachineReference struct {
	// name of the VirtualMachine.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// namespace of the VirtualMachine on the workload cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
}

// ReplicationProtocol is the DRBD replication protocol.
// +kubebuilder:validation:Enum=A;C
type ReplicationProtocol string

const (
	// ProtocolA is asynchronous replication: a write completes once it is on the
	// local disk and in the TCP send buffer. Writes in flight can be lost on failover.
	ProtocolA ReplicationProtocol = "A"
	// ProtocolC is synchronous replication: a write completes once both disks have it.
	ProtocolC ReplicationProtocol = "C"
)

// PhaseTransition records when a multi-step request entered one of its phases.
type PhaseTransition struct {
	// phase that was entered.
	// +required
	Phase string `json:"phase"`

	// time the phase was entered, with microsecond precision so that the audit
	// trail shows how long fast phases took.
	// +required
	Time metav1.MicroTime `json:"time"`

	// message says what happened on entry, for the audit trail.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}
