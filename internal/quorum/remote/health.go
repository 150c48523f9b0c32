package remote

import (
	"fmt"
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// State is the prober's verdict on a cluster.
type State string

const (
	// NotConnected means the cluster has no connection (not in a zone, or its
	// kubeconfig Secret is missing or invalid).
	NotConnected State = "NotConnected"
	// Connecting means connected, with no verdict yet. A new connection stays here
	// until a probe succeeds or FailureThreshold probes in a row fail.
	Connecting State = "Connecting"
	// Reachable means the last probe succeeded, or fewer than FailureThreshold
	// probes failed since.
	Reachable State = "Reachable"
	// Unreachable means FailureThreshold probes in a row failed. A cache of an
	// unreachable cluster answers with what it saw last: acting on it is unsafe.
	Unreachable State = "Unreachable"
)

// ReasonNotConnected is the reason of a cluster without a connection.
const ReasonNotConnected = "ClusterNotConnected"

// DefaultFailureThreshold is how many probes in a row must fail before a
// cluster is unreachable: one lost probe is a blip, not an outage.
const DefaultFailureThreshold = 3

// Health is a cluster's reachability as the prober judged it.
type Health struct {
	State State
	// ServerVersion is what the API server reported at the last success.
	ServerVersion string
	// LastProbeTime is the last probe, whatever its outcome.
	LastProbeTime time.Time
	// LastSuccessTime is when the API server last answered.
	LastSuccessTime time.Time
	// FailedProbes counts the probes that failed since the last success.
	FailedProbes int
	// Err is the last failed probe's error, nil after a success. It names the
	// server, never a credential.
	Err error
}

// Connected reports whether the cluster has a connection.
func (h Health) Connected() bool { return h.State != NotConnected && h.State != "" }

// Reachable reports whether the API server answers.
func (h Health) Reachable() bool { return h.State == Reachable }

// Unreachable reports whether the cluster is known not to answer: its cache may
// be stale. A cluster still connecting is neither reachable nor unreachable.
func (h Health) Unreachable() bool { return h.State == Unreachable }

// Reason is a condition reason for the verdict.
func (h Health) Reason() string {
	switch h.State {
	case Connecting:
		return srv1alpha1.ReasonProgressing
	case Reachable:
		return srv1alpha1.ReasonAPIServerReachable
	case Unreachable:
		return srv1alpha1.ReasonAPIServerDown
	default:
		return ReasonNotConnected
	}
}

// Message is a condition message for the verdict.
func (h Health) Message() string {
	switch h.State {
	case Connecting:
		if h.FailedProbes > 0 && h.Err != nil {
			return fmt.Sprintf("connecting; %d health probes failed so far: %s", h.FailedProbes, h.Err.Error())
		}
		return "connecting; waiting for the first health probe"
	case Reachable:
		return "API server answered the health probe"
	case Unreachable:
		return fmt.Sprintf("API server did not answer the health probe at %s", h.LastProbeTime.UTC().Format(time.RFC3339))
	default:
		return "no connection (is the cluster in the zone, with a valid kubeconfig Secret?)"
	}
}

// verdict is the state after one more probe: unreachable only after threshold
// failures in a row, reachable again on the first success.
func (h Health) verdict(ok bool, threshold int) State {
	if ok {
		return Reachable
	}
	if h.FailedProbes >= threshold {
		return Unreachable
	}
	if h.State == "" {
		return Connecting
	}
	return h.State
}
