package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ConsistencyMode says what a group's replication points guarantee.
// +kubebuilder:validation:Enum=Crash;Application
type ConsistencyMode string

const (
	// ConsistencyCrash points hold what the disks held at one instant, as
	// after a power cut: the guest's file systems replay their journals.
	ConsistencyCrash ConsistencyMode = "Crash"
	// ConsistencyApplication points are taken while every guest's file
	// systems are frozen through the guest agent, so they hold no
	// half-written file system state.
	ConsistencyApplication ConsistencyMode = "Application"
)

// ConsistencySpec asks for application-consistent replication points: the
// product freezes each running guest's file systems (KubeVirt's freeze
// subresource, carried out by the guest agent) right before it takes a point
// and thaws them right after.
type ConsistencySpec struct {
	// mode is Crash (the default) or Application.
	// +optional
	// +kubebuilder:default=Crash
	Mode ConsistencyMode `json:"mode,omitempty"`

	// freezeTimeoutSeconds bounds how long a guest stays frozen: KubeVirt
	// thaws it by itself after this long even if the product never does.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	FreezeTimeoutSeconds int32 `json:"freezeTimeoutSeconds,omitempty"`
}

// ConsistencyPoint is the consistency one replication point reached.
type ConsistencyPoint struct {
	// time the point was taken.
	// +required
	Time metav1.Time `json:"time"`

	// source is what took the point: VolSyncCycle, TestFailover,
	// ArrayReplication or PlannedFailover.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Source string `json:"source"`

	// consistency is Application when every running VM was frozen while
	// the point was taken, Crash otherwise.
	// +required
	Consistency ConsistencyMode `json:"consistency"`

	// crashConsistentVMs are the VMs that could not be frozen (their guest
	// agent did not answer), as namespace/name.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	CrashConsistentVMs []string `json:"crashConsistentVMs,omitempty"`

	// frozenVMs are the VMs that were frozen for the point, as namespace/name.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	FrozenVMs []string `json:"frozenVMs,omitempty"`

	// frozenMilliseconds is the longest time a guest stayed frozen.
	// +optional
	FrozenMilliseconds int64 `json:"frozenMilliseconds,omitempty"`

	// message says why a point fell back to crash consistency.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// ConsistencyStatus reports the consistency of the group's last points.
type ConsistencyStatus struct {
	// lastPoint is the newest replication point the product took.
	// +optional
	LastPoint *ConsistencyPoint `json:"lastPoint,omitempty"`
}
