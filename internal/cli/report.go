package cli

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/siterecovery/siterecovery/internal/report"
)

// The status report, as status prints it with -o json|yaml|jsonpath. Field
// names are part of the CLI's interface: scripts read them.

// StatusReport is what status shows, per DR namespace. Its apiVersion and
// kind (ReportGroupVersion, StatusReport) let cli-runtime's printers print it.
type StatusReport struct {
	metav1.TypeMeta `json:",inline"`
	Namespaces      []NamespaceStatus `json:"namespaces"`
}

// DeepCopyObject implements runtime.Object.
func (r *StatusReport) DeepCopyObject() runtime.Object { return deepCopyJSON(r) }

// NamespaceStatus is one DR namespace.
type NamespaceStatus struct {
	Namespace string        `json:"namespace"`
	Zones     []ZoneStatus  `json:"zones"`
	Groups    []GroupStatus `json:"groups"`
}

// ZoneStatus is one ProtectionZone and its clusters.
type ZoneStatus struct {
	Name     string          `json:"name"`
	Backend  string          `json:"backend"`
	Ready    string          `json:"ready"`
	Clusters []ClusterStatus `json:"clusters"`
}

// ClusterStatus is a workload cluster as quorum-manager and the CLI see it.
type ClusterStatus struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// Reachable is quorum-manager's verdict (True, False, Unknown).
	Reachable string `json:"reachable"`
	Message   string `json:"message,omitempty"`
	Version   string `json:"version,omitempty"`
	// Access is how the CLI reached the cluster: "direct" through its
	// kubeconfig Secret, else "quorum view" with the reason in AccessNote.
	Access     string `json:"access"`
	AccessNote string `json:"accessNote,omitempty"`
}

// GroupStatus is one ProtectionGroup.
type GroupStatus struct {
	Name          string `json:"name"`
	Zone          string `json:"zone"`
	ActiveCluster string `json:"activeCluster"`
	CurrentState  string `json:"currentState"`
	Health        string `json:"health,omitempty"`
	FailoverReady bool   `json:"failoverReady"`
	MaxLagSeconds int64  `json:"maxLagSeconds"`
	RPOSeconds    int32  `json:"rpoObjectiveSeconds"`
	RPOMet        bool   `json:"rpoMet"`
	// OpenRPOEvents are the Active RPOEvents of the group.
	OpenRPOEvents []string       `json:"openRPOEvents,omitempty"`
	Requests      []RequestState `json:"unfinishedRequests,omitempty"`
	// LockHolder is the request holding the group's failover Lease.
	LockHolder  string        `json:"lockHolder,omitempty"`
	VMs         []VMState     `json:"virtualMachines"`
	Replication []VolumeState `json:"replication,omitempty"`
	// Drill is the group's drill schedule and last drill, if it has one.
	Drill *report.DrillSchedule `json:"drill,omitempty"`
}

// RequestState is an unfinished request of a group.
type RequestState struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
	// BootStages is the boot plan a FailoverRequest follows on its target,
	// stage by stage.
	BootStages []BootStageState `json:"bootStages,omitempty"`
}

// VMState is one VM on each cluster of its zone.
type VMState struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Clusters maps a cluster to the VM's printable status there; for a
	// cluster the CLI cannot read, the group's state as the quorum cluster
	// recorded it, in parentheses.
	Clusters map[string]string `json:"clusters"`
}

// VolumeState is the replication of one VM volume.
type VolumeState struct {
	VM               string `json:"vm"`
	Volume           int32  `json:"volume"`
	ConnectionState  string `json:"connectionState"`
	DiskState        string `json:"diskState"`
	PeerDiskState    string `json:"peerDiskState"`
	ReplicationState string `json:"replicationState"`
	PercentInSync    string `json:"percentInSync"`
	LagSeconds       int64  `json:"lagSeconds"`
}
