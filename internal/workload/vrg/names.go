package vrg

import "time"

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "volumereplicationgroup"

// DefaultOperatorNamespace is where global VGRs live unless Options say otherwise.
const DefaultOperatorNamespace = "ramen-system"

// Finalizers and annotations this controller owns.
const (
	// VRGFinalizer holds a VRG until its PVCs and, for the last of the group, the
	// global VGR are cleaned up.
	VRGFinalizer = "siterecovery.trilio.io/vrg-protection"
	// PVCFinalizer holds a PVC protected as primary until the VRG lets it go.
	PVCFinalizer = "siterecovery.trilio.io/vrg-pvc-protection"
	// PVCOwnerAnnotation on a PVC names the VRG (same namespace) that protects it.
	PVCOwnerAnnotation = "siterecovery.trilio.io/vrg-owner"
)

// Retry intervals of waits that no watch ends.
const (
	// consensusRetry re-checks peers; peer changes also enqueue through the watches.
	consensusRetry = 10 * time.Second
	// vgrRetry re-reads a VGR that is progressing or was just created by a peer.
	vgrRetry = 5 * time.Second
	// classRetry waits for a missing VolumeGroupReplicationClass.
	classRetry = 30 * time.Second
)

// Reasons specific to this controller, used for events and non-spec conditions.
const (
	reasonVGRCreated   = "GlobalVGRCreated"
	reasonVGRUpdated   = "GlobalVGRUpdated"
	reasonVGRDeleted   = "GlobalVGRDeleted"
	reasonVGRKept      = "GlobalVGRKept"
	reasonStateChanged = "StateChanged"
	reasonNoClass      = "VolumeGroupReplicationClassNotFound"
	reasonGating       = "WaitingForSiblings"
	reasonConsensus    = "WaitingForConsensus"
)
