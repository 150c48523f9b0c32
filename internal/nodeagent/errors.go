package nodeagent

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/siterecovery/siterecovery/internal/drbd"
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
	// ReasonSyncing: the local data is not UpToDate yet.
	ReasonSyncing = "Syncing"
)

// ConditionError is a phase failure the status reports as a False condition. The
// reconciler stops the phase chain, writes the status and requeues after
// RequeueAfter (0: only a spec or DRBD state change retries).
type ConditionError struct {
	Condition    string
	Reason       string
	Message      string
	RequeueAfter time.Duration
	Err          error
}

func (e *ConditionError) Error() string {
	return fmt.Sprintf("%s=False (%s): %s", e.Condition, e.Reason, e.Message)
}

func (e *ConditionError) Unwrap() error { return e.Err }

// condition returns the False condition e stands for.
func (e *ConditionError) condition(generation int64) metav1.Condition {
	return metav1.Condition{Type: e.Condition, Status: metav1.ConditionFalse, Reason: e.Reason,
		Message: e.Message, ObservedGeneration: generation}
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
