package v1alpha1

import (
	"strings"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Labels and annotations of the global VolumeGroupReplication and of incremental
// sync for consistency groups. Storage vendors and Ramen set and read
// these keys, so they keep Ramen's ramendr.openshift.io and ramen.openshift.io
// prefixes although the kinds of this package are served under GroupVersion.
const (
	// GlobalVGRLabel marks VRGs and DRPCs that share one global VGR; its value is
	// GlobalVGRName(groupReplicationID).
	GlobalVGRLabel = "ramendr.openshift.io/global-vgr"
	// GlobalLabel on a VolumeGroupReplicationClass says its replication group is
	// global; both peers must carry it for the PeerClass to be global.
	GlobalLabel = "ramendr.openshift.io/global"
	// OffloadedLabel on a StorageClass says replication is offloaded to the array.
	OffloadedLabel = "ramendr.openshift.io/offloaded"
	// StorageIDLabel links a StorageClass and a VolumeGroupReplicationClass.
	StorageIDLabel = "ramendr.openshift.io/storageid"
	// GroupReplicationIDLabel names the replication group of a VolumeGroupReplicationClass.
	GroupReplicationIDLabel = "ramendr.openshift.io/groupreplicationid"
	// ConsistencyGroupLabel is put by a VRG on each PVC it protects; a global VGR
	// selects PVCs by it alone.
	ConsistencyGroupLabel = "ramendr.openshift.io/consistency-group"
	// CreatedByRamenLabel marks objects such as the global VGR that Ramen created.
	CreatedByRamenLabel = "ramendr.openshift.io/created-by-ramen"
	// VGSStatusLabel marks a VolumeGroupSnapshot as the current or previous one of
	// an incremental sync cycle.
	VGSStatusLabel = "ramen.openshift.io/vgs-status"
	// EnableDiffAnnotation on a DRPC turns on incremental sync; the value must be
	// exactly "true".
	EnableDiffAnnotation = "drplacementcontrol.ramendr.openshift.io/enable-diff"

	// VGSStatusCurrent is the snapshot of the cycle in progress.
	VGSStatusCurrent = "current"
	// VGSStatusPrevious is the base snapshot for the next cycle.
	VGSStatusPrevious = "previous"

	// GlobalVGRPrefix prefixes the name of a global VGR.
	GlobalVGRPrefix = "global-"
	// maxLabelValueLength is the Kubernetes limit on a label value.
	maxLabelValueLength = 63
)

// GlobalVGRName returns the name of the global VGR of a replication group, which is
// also the value of GlobalVGRLabel: "global-<grID>", lower-cased, at most 63
// characters.
func GlobalVGRName(groupReplicationID string) string {
	name := strings.ToLower(GlobalVGRPrefix + groupReplicationID)
	if len(name) > maxLabelValueLength {
		name = strings.TrimRight(name[:maxLabelValueLength], "-.")
	}
	return name
}

// VolSyncPSKKey is the key of the pre-shared-key Secret VolSync's TLS movers read.
const VolSyncPSKKey = "psk.txt"

// VolSyncPSKSecretName is the Secret holding the TLS pre-shared key of a
// VolSync VRG's movers, the same on both clusters: the quorum tier mints the
// key once per DRPlacementControl (whose name the VRGs bear) and copies it to
// both sides, since a key each side minted on its own would never match.
func VolSyncPSKSecretName(vrg string) string { return vrg + "-vs-secret" }

// IsDiffSyncEnabled reports whether incremental sync is enabled on an object.
func IsDiffSyncEnabled(annotations map[string]string) bool {
	return annotations[EnableDiffAnnotation] == "true"
}

// Condition types.
const (
	// DRPC conditions.
	ConditionAvailable    = "Available"
	ConditionPeerReady    = "PeerReady"
	ConditionProtected    = "Protected"
	ConditionGlobalAction = "GlobalAction"

	// VRG conditions.
	ConditionDataReady       = "DataReady"
	ConditionDataProtected   = "DataProtected"
	ConditionGlobalState     = "GlobalState"
	ConditionGlobalSecondary = "GlobalSecondary"
	// ConditionFinalSynced is True on a VolSync VRG once every consistency
	// group completed the cycle spec.volSync.finalSync asked for.
	ConditionFinalSynced = "FinalSynced"
)

// Condition reasons named by the specs.
const (
	ReasonConsensusReached    = "ConsensusReached"
	ReasonConsensusNotReached = "ConsensusNotReached"
	ReasonPVCsNotInUse        = "PVCsNotInUse"
	ReasonPVCsInUse           = "PVCsInUse"
	ReasonUnused              = "Unused"
	ReasonReady               = "Ready"
	ReasonReplicated          = "Replicated"
	ReasonDataProtected       = "DataProtected"
	ReasonProgressing         = srv1alpha1.ReasonProgressing
	ReasonError               = "Error"
)

// Condition messages the spec prescribes verbatim.
const (
	MessagePVCReady           = "PVC in the VolumeReplicationGroup is ready for use"
	MessagePVCDataProtected   = "PVC in the VolumeReplicationGroup is data protected by storage provider"
	MessagePVCsNotInUse       = "PVCs are not in use"
	MessagePVCsInUse          = "PVCs are still in use"
	MessageUnusedWhenPrimary  = "Not applicable when Primary"
	MessageNoPVCsAsSecondary  = "No PVCs are protected using Volsync scheme. PVC protection as secondary is complete, or no PVCs needed protection using VolumeReplication scheme"
	MessageConsensusStateFmt  = "Consensus reached for state %s"
	MessageWaitingStateFmt    = "Waiting for VRGs to agree on state %s, pending: %s"
	MessageConsensusActionFmt = "Consensus reached for action %s"
	MessageExpectedActionFmt  = "Expected %s to %s, pending: %s"
)
