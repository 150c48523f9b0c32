package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// DRBDRole is the DRBD role of a replica.
// +kubebuilder:validation:Enum=Primary;Secondary
type DRBDRole string

const (
	// RolePrimary may be written to; only one replica is Primary in a planned flow.
	RolePrimary DRBDRole = "Primary"
	// RoleSecondary receives replicated writes.
	RoleSecondary DRBDRole = "Secondary"
)

// Condition types of a DRBDResource.
const (
	// ConditionConfigured is True when the resource file is rendered and applied.
	ConditionConfigured = "Configured"
	// ConditionConnected is True while every peer is connected.
	ConditionConnected = "Connected"
	// ConditionRoleApplied is True when status.role equals spec.role.
	ConditionRoleApplied = "RoleApplied"
	// ConditionQuorum is True while the resource has quorum.
	ConditionQuorum = "Quorum"
)

// Reasons of a DRBDResource.
const (
	ReasonBackingDeviceMissing = "BackingDeviceMissing"
	ReasonAdmFailed            = "DrbdadmFailed"
	ReasonPromotionRefused     = "PromotionRefused"
	ReasonApplied              = "Applied"
)

// QuorumPolicy is DRBD's quorum option.
// +kubebuilder:validation:Enum=majority;off
type QuorumPolicy string

// Quorum policies.
const (
	QuorumMajority QuorumPolicy = "majority"
	QuorumOff      QuorumPolicy = "off"
)

// QuorumForRole is the quorum a replica of a two-node pair runs with in a role.
// Two nodes cannot form a majority once their link drops, so majority on both
// sides would turn every replication-link outage into I/O errors for the
// production VMs. The primary therefore runs without DRBD quorum (the quorum
// cluster's failover Lease and the demote-before-promote rule of a planned
// failover keep two primaries from running), and the secondary with majority:
// it loses quorum with the link, and DRBD then refuses to promote it until a
// failover forces it. Its node is not tainted: nothing runs from a Secondary,
// and a node-wide taint would keep other groups' VMs off the node.
func QuorumForRole(role DRBDRole) QuorumSettings {
	if role == RolePrimary {
		return QuorumSettings{Policy: QuorumOff, OnNoQuorum: OnNoQuorumIOError}
	}
	return QuorumSettings{Policy: QuorumMajority, OnNoQuorum: OnNoQuorumIOError}
}

// OnNoQuorum is what DRBD does with I/O when quorum is lost.
// +kubebuilder:validation:Enum=io-error;suspend-io
type OnNoQuorum string

// On-no-quorum actions.
const (
	OnNoQuorumIOError   OnNoQuorum = "io-error"
	OnNoQuorumSuspendIO OnNoQuorum = "suspend-io"
)

// QuorumSettings are DRBD's quorum options for the resource.
type QuorumSettings struct {
	// policy is "majority" (default) or "off".
	// +optional
	// +kubebuilder:default=majority
	Policy QuorumPolicy `json:"policy,omitempty"`
	// onNoQuorum is "io-error" (default) or "suspend-io".
	// +optional
	// +kubebuilder:default=io-error
	OnNoQuorum OnNoQuorum `json:"onNoQuorum,omitempty"`
}

// DRBDVolume is one disk of the VM, replicated as one DRBD volume.
type DRBDVolume struct {
	// number is the DRBD volume number inside the resource.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65534
	Number int32 `json:"number"`
	// minor is the device minor: the volume appears as /dev/drbd<minor>.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1048575
	Minor int32 `json:"minor"`
	// disk is the VM disk this volume replicates.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Disk string `json:"disk,omitempty"`
	// backingPVC is the local block-mode PVC that stores this replica. The
	// drbd-node-agent resolves the block device from it (the kubelet's
	// volumeDevices folder), and only when the PVC is bound, in Block mode and
	// labelled with the same siterecovery.trilio.io/dr-namespace and
	// siterecovery.trilio.io/protection-request as this DRBDResource; a spec
	// never names a device of the node.
	// +required
	BackingPVC *LocalObjectReference `json:"backingPVC,omitempty"`
	// metaPVC is the local block-mode PVC that holds DRBD's metadata for this
	// volume (flex-external meta-disk), so that the backing device holds data
	// only and the DRBD device exposes all of it. Unset: the metadata lives at
	// the end of the backing device (internal), which makes the DRBD device
	// smaller than it. The agent checks it as it checks backingPVC.
	// +optional
	MetaPVC *LocalObjectReference `json:"metaPVC,omitempty"`
	// sizeBytes of the backing device.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SizeBytes int64 `json:"sizeBytes,omitempty"`
}

// DRBDPeer is a replica of the resource on another node (normally another cluster).
type DRBDPeer struct {
	// nodeName is the peer's host name, as DRBD's "on <host>" section names it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName"`
	// nodeID is the peer's DRBD node id.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31
	NodeID int32 `json:"nodeID"`
	// address is the peer's replication IP address.
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="address must be an IPv4 or IPv6 address"
	Address string `json:"address"`
	// port is the peer's replication TCP port.
	// +required
	// +kubebuilder:validation:Minimum=7000
	// +kubebuilder:validation:Maximum=7999
	Port int32 `json:"port"`
	// cluster is the zone cluster the peer lives in, for operators.
	// +optional
	Cluster string `json:"cluster,omitempty"`
}

// DRBDResourceSpec is the desired state of one VM's replica on this cluster.
// +kubebuilder:validation:XValidation:rule="!has(self.peers) || self.peers.all(p, p.nodeID != self.nodeID)",message="peers must not use the local nodeID"
// +kubebuilder:validation:XValidation:rule="!has(self.peers) || self.peers.all(p, self.peers.exists_one(q, q.nodeID == p.nodeID))",message="peer nodeIDs must be unique"
// +kubebuilder:validation:XValidation:rule="self.volumes.all(v, self.volumes.exists_one(w, w.minor == v.minor))",message="volume minors must be unique"
// +kubebuilder:validation:XValidation:rule="!has(self.forcePromotion) || !self.forcePromotion || self.role == 'Primary'",message="forcePromotion requires role Primary"
type DRBDResourceSpec struct {
	// nodeName is the node that holds this cluster's replica; only that node's
	// drbd-node-agent acts on the resource.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName"`
	// nodeID is this replica's DRBD node id.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31
	NodeID int32 `json:"nodeID"`
	// port is the local replication TCP port (7000-7999).
	// +required
	// +kubebuilder:validation:Minimum=7000
	// +kubebuilder:validation:Maximum=7999
	Port int32 `json:"port"`
	// protocol is A (asynchronous) or C (synchronous).
	// +optional
	// +kubebuilder:default=A
	Protocol ReplicationProtocol `json:"protocol,omitempty"`
	// role is the desired DRBD role of this replica.
	// +optional
	// +kubebuilder:default=Secondary
	Role DRBDRole `json:"role,omitempty"`
	// forcePromotion promotes with "primary --force" even without UpToDate data or
	// while the peer may still be primary. Only an unplanned failover sets it.
	// +optional
	ForcePromotion bool `json:"forcePromotion,omitempty"`
	// quorum options.
	// +optional
	Quorum QuorumSettings `json:"quorum,omitempty"`
	// fencedPeers names peers (by nodeName) that an operator confirmed fenced
	// during an unplanned failover whose source could not be reached. The agent
	// leaves them out of the resource file, so DRBD drops its connection to
	// them and does not reconnect while they are listed: a forced promotion then
	// never meets them as a connected Primary. Only the failover-controller sets
	// it; removing a name reconnects that peer (after a forced promotion its data
	// has diverged and must be resynced from the new primary).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=31
	// +kubebuilder:validation:items:MaxLength=253
	FencedPeers []string `json:"fencedPeers,omitempty"`
	// discardData, when set to a value the agent has not carried out yet
	// (status.dataDiscarded), asks it to throw this replica's data away and
	// take a full resync from its peer. The failover-controller sets it, to
	// the UID of a failback request, on the replicas of a cluster that was
	// fenced off during an unplanned failover: they stayed Primary while the
	// peer was promoted with force, so their writes since then diverged. The
	// agent acts only while the replica is Secondary and connected to no peer.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	DiscardData string `json:"discardData,omitempty"`
	// statusRequest asks the agent to read DRBD's current figures
	// ("drbdsetup status") into the status, and to echo the token in
	// status.statusAnswered. DRBD's event stream reports out-of-sync
	// figures only with a state change, so without a request a replica
	// writing alone keeps showing the figure of its disconnect. quorum-manager
	// sets it, to a request's UID, when an unplanned promotion measures what
	// may be lost.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	StatusRequest string `json:"statusRequest,omitempty"`
	// peerAuthentication makes the replicas authenticate each other with a
	// shared secret before DRBD accepts a replication connection (see
	// DRBDPeerAuthentication for where the secret lives and why). Unset:
	// peers are trusted by their address.
	// +optional
	PeerAuthentication *DRBDPeerAuthentication `json:"peerAuthentication,omitempty"`
	// tls encrypts the replication link with DRBD's TLS, copied from the
	// zone's spec.drbd.tls. With mode Required the agent connects only if
	// the node's DRBD can do TLS, and otherwise holds the replica with
	// Configured=False ReplicationTLSUnsupported. Unset: plain TCP.
	// +optional
	TLS *DRBDReplicationTLS `json:"tls,omitempty"`
	// volumes are the VM's disks, one DRBD volume each.
	// +required
	// +listType=map
	// +listMapKey=number
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Volumes []DRBDVolume `json:"volumes"`
	// peers are the other replicas. Written by the protection-controller once each
	// side's agent has reported its address.
	// +optional
	// +listType=map
	// +listMapKey=nodeName
	// +kubebuilder:validation:MaxItems=31
	Peers []DRBDPeer `json:"peers,omitempty"`
}

// DRBDPeerVolumeStatus is the replication state of one volume towards one peer.
type DRBDPeerVolumeStatus struct {
	// number is the volume number.
	// +required
	Number int32 `json:"number"`
	// replicationState (Established, SyncSource, SyncTarget, Off, ...).
	// +optional
	ReplicationState string `json:"replicationState,omitempty"`
	// peerDiskState is the peer's disk state (UpToDate, Inconsistent, DUnknown, ...).
	// +optional
	PeerDiskState string `json:"peerDiskState,omitempty"`
	// percentInSync as a decimal string with two places ("100.00").
	// +optional
	PercentInSync string `json:"percentInSync,omitempty"`
	// outOfSyncBytes still to be sent to this peer.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OutOfSyncBytes int64 `json:"outOfSyncBytes,omitempty"`
	// pending is the number of requests sent to this peer whose answer has
	// not come back yet (DRBD's pending: application and resync packets on
	// the wire).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Pending int64 `json:"pending,omitempty"`
	// unacked is the number of this peer's requests this node has yet to
	// answer (DRBD's unacked).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Unacked int64 `json:"unacked,omitempty"`
}

// DRBDPeerStatus is the connection to one peer.
type DRBDPeerStatus struct {
	// nodeName of the peer.
	// +required
	NodeName string `json:"nodeName"`
	// nodeID of the peer.
	// +optional
	NodeID int32 `json:"nodeID,omitempty"`
	// connectionState (Connected, Connecting, StandAlone, ...).
	// +optional
	ConnectionState string `json:"connectionState,omitempty"`
	// peerRole (Primary, Secondary, Unknown).
	// +optional
	PeerRole string `json:"peerRole,omitempty"`
	// apInFlightBytes are the application writes sent to this peer that it
	// has not yet confirmed written (DRBD's ap-in-flight, over every volume).
	// Under protocol A a write completes before that confirmation, so these
	// are writes the guest saw complete that the peer may not hold yet.
	// +optional
	// +kubebuilder:validation:Minimum=0
	APInFlightBytes int64 `json:"apInFlightBytes,omitempty"`
	// volumes holds the per-volume replication state towards this peer.
	// +optional
	// +listType=map
	// +listMapKey=number
	Volumes []DRBDPeerVolumeStatus `json:"volumes,omitempty"`
}

// DRBDVolumeStatus is the local state of one volume.
type DRBDVolumeStatus struct {
	// number is the volume number.
	// +required
	Number int32 `json:"number"`
	// minor is the device minor.
	// +optional
	Minor int32 `json:"minor,omitempty"`
	// diskState of the local disk (UpToDate, Inconsistent, Diskless, ...).
	// +optional
	DiskState string `json:"diskState,omitempty"`
	// devicePath is the backing device the agent resolved.
	// +optional
	DevicePath string `json:"devicePath,omitempty"`
}

// DRBDResourceStatus is what the drbd-node-agent observes of the replica.
type DRBDResourceStatus struct {
	// observedGeneration is the generation the agent last applied.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// address is the local replication address the agent serves the resource on;
	// the protection-controller copies it into the other side's peer list.
	// +optional
	Address string `json:"address,omitempty"`
	// role is the current DRBD role.
	// +optional
	Role string `json:"role,omitempty"`
	// quorum is true while the resource has quorum.
	// +optional
	Quorum bool `json:"quorum,omitempty"`
	// mayPromote is DRBD's own verdict that a promotion would succeed now.
	// +optional
	MayPromote bool `json:"mayPromote,omitempty"`
	// promotable is true when the local data is UpToDate on every volume and no
	// connected peer is Primary: a planned promotion can proceed.
	// +optional
	Promotable bool `json:"promotable,omitempty"`
	// metadataCreated is true once "drbdadm create-md" has run for every volume.
	// +optional
	MetadataCreated bool `json:"metadataCreated,omitempty"`
	// dataDiscarded is the spec.discardData the agent last carried out: the
	// replica's data was thrown away and a full resync from the peer began.
	// +optional
	DataDiscarded string `json:"dataDiscarded,omitempty"`
	// volumes holds the local per-volume state.
	// +optional
	// +listType=map
	// +listMapKey=number
	Volumes []DRBDVolumeStatus `json:"volumes,omitempty"`
	// peers holds the per-peer connection and replication state.
	// +optional
	// +listType=map
	// +listMapKey=nodeName
	Peers []DRBDPeerStatus `json:"peers,omitempty"`
	// lastUpdateTime is when the agent last wrote the status.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// statusAnswered is the spec.statusRequest whose reading of DRBD's
	// current figures this status carries.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	StatusAnswered string `json:"statusAnswered,omitempty"`
	// statusReadTime is when the agent last read DRBD's current figures on
	// request; the peers' outOfSyncBytes are from that moment or a later
	// state change.
	// +optional
	StatusReadTime *metav1.Time `json:"statusReadTime,omitempty"`
	// conditions: Configured, Connected, RoleApplied, Quorum, Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DRBDResource is one protected VM's DRBD resource on one workload cluster: one
// DRBD volume per VM disk, replicated to the peer replica on the other cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=drbdr
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Desired",type=string,JSONPath=`.spec.role`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.status.role`
// +kubebuilder:printcolumn:name="Connection",type=string,JSONPath=`.status.peers[0].connectionState`
// +kubebuilder:printcolumn:name="Disk",type=string,JSONPath=`.status.volumes[0].diskState`
// +kubebuilder:printcolumn:name="Sync",type=string,JSONPath=`.status.peers[0].volumes[0].percentInSync`
// +kubebuilder:printcolumn:name="Quorum",type=boolean,JSONPath=`.status.quorum`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:selectablefield:JSONPath=`.spec.nodeName`
type DRBDResource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired replica.
	// +required
	Spec DRBDResourceSpec `json:"spec"`
	// status is the observed replica.
	// +optional
	Status DRBDResourceStatus `json:"status,omitempty"`
}

// DRBDResourceList is a list of DRBDResources.
// +kubebuilder:object:root=true
type DRBDResourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DRBDResource `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DRBDResource{}, &DRBDResourceList{})
}
