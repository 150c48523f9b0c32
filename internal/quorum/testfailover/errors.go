package testfailover

import (
	"fmt"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// invalid is a problem with the request or the group that retrying cannot fix
// (a Stalled error): the test fails at once with reason on its Ready condition,
// rejected in Pending and through the cleanup anywhere else.
func invalid(reason, format string, args ...any) error {
	return flow.Stalled(reason, format, args...)
}

// unreachable is a DR cluster that cannot be reached now (a Waiting error): the
// phase retries after pollEvery.
func unreachable(cluster string, err error) error {
	return &flow.Error{Kind: flow.KindWaiting, Reason: srv1alpha1.ReasonProgressing, RequeueAfter: pollEvery,
		Err: fmt.Errorf("cannot reach DR cluster %s: %w", cluster, err)}
}

// waitFor is a phase that waits on the DR cluster; a watch or the poll wakes it.
func waitFor(format string, args ...any) error {
	return flow.Waiting(srv1alpha1.ReasonProgressing, 0, format, args...)
}
