package protection

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// clusterCallError is a failed API call to a workload cluster.
type clusterCallError struct {
	cluster, what string
	err           error
}

func (e *clusterCallError) Error() string {
	return fmt.Sprintf("%s on cluster %s: %v", e.what, e.cluster, e.err)
}

func (e *clusterCallError) Unwrap() error { return e.err }

// remoteErr wraps an error of a workload API call as a transient error naming
// the cluster and what was done.
func remoteErr(cluster, what string, err error) error {
	return flow.Transient(ReasonRequestFailed, &clusterCallError{cluster: cluster, what: what, err: err})
}

// unreachable turns a failed call to a workload cluster that does not answer
// (no connection, or the prober has found it unreachable) into a wait with
// the reason ClusterUnreachable, which names the cluster and what failed. The
// client's own error is not shown: it carries the request's URL, query
// included. Any other error is returned as it is. resumes says what goes on
// once the cluster answers.
func (r *Reconciler) unreachable(s *scope, err error, resumes string) error {
	var call *clusterCallError
	if !errors.As(err, &call) {
		return err
	}
	cause, refused := noAnswer(call.err)
	if !refused && !r.knownUnreachable(s, call.cluster) {
		return err
	}
	if cause != "" {
		cause = " (" + cause + ")"
	}
	return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "cluster %s is unreachable: %s failed%s; %s resumes when it answers again",
		call.cluster, call.what, cause, resumes)
}

// noAnswer tells whether err means the API server did not answer, rather than
// answered with an error, and says how in a few words.
func noAnswer(err error) (string, bool) {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", true
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timed out", true
	case errors.As(err, &ne):
		return "no connection", true
	}
	return "", false
}

// knownUnreachable is true when quorum-manager's prober has found cluster
// unreachable.
func (r *Reconciler) knownUnreachable(s *scope, cluster string) bool {
	for _, sd := range s.sides() {
		if sd.cluster == cluster && sd.rc != nil && r.Remote.Health(sd.rc.Key).Unreachable() {
			return true
		}
	}
	return false
}
