package nodeagent

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/siterecovery/siterecovery/internal/drbd"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// Reasons the agent uses besides the API package's.
const (
	// ReasonWaitingForPeers: spec.peers is empty; the protection-controller fills it
	// once both sides reported status.address.
	ReasonWaitingForPeers = "WaitingForPeers"
	// ReasonNameConflict: another DRBDResource on this node uses the same DRBD name.
	ReasonNameConflict = "NameConflict"
	// ReasonNotUp: DRBD does not know the resource (yet).
	ReasonNotUp = "NotUp"
	// ReasonConnected / ReasonDisconnected describe the Connected condition.
	ReasonConnected    = "Connected"
	ReasonDisconnected = "Disconnected"
	// ReasonQuorumPresent / ReasonQuorumLost describe the Quorum condition.
	ReasonQuorumPresent = "QuorumPresent"
	ReasonQuorumLost    = "QuorumLost"
	// ReasonBackingDeviceRefused: a backing or metadata PVC is not a bound,
	// block-mode claim of the DRBDResource's own protection request; the agent
	// touches no device for it.
	ReasonBackingDeviceRefused = "BackingDeviceRefused"
	// ReasonPeerAddressRefused: a peer's address lies outside the replication
	// networks; the agent does not connect to it.
	ReasonPeerAddressRefused = "PeerAddressRefused"
)

// waitOn is a phase failure that resolves on its own, shown as condition cond
// False with reason; it is retried after after (zero: when the spec or the DRBD
// state changes).
func waitOn(cond, reason string, after time.Duration, cause error, msg string) *flow.Error {
	return &flow.Error{Kind: flow.KindWaiting, Condition: cond, Reason: reason, Message: msg, Err: cause, RequeueAfter: after}
}

// stalledOn is a phase failure only a spec change fixes, shown as condition cond
// False with reason.
func stalledOn(cond, reason string, cause error, msg string) *flow.Error { //nolint:unparam // every stall is a Configured one today; the condition stays named at each call, as waitOn's
	return &flow.Error{Kind: flow.KindStalled, Condition: cond, Reason: reason, Message: msg, Err: cause}
}

// falseCondition is the False condition a phase failure stands for.
func falseCondition(e *flow.Error, generation int64) metav1.Condition {
	return metav1.Condition{Type: e.Condition, Status: metav1.ConditionFalse, Reason: e.Reason,
		Message: e.Error(), ObservedGeneration: generation}
}

// drbdMessage returns what drbd-utils printed for a failed command (its stderr),
// or the error text when there is none.
func drbdMessage(err error) string {
	var xe *drbd.ExitError
	if errors.As(err, &xe) && xe.Stderr != "" {
		return xe.Stderr
	}
	return err.Error()
}
