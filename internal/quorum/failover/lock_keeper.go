package failover

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// startedMoving reports whether a request has acted on its group, so that it
// must keep the group's Lease until it ends: it left Pending (from
// StoppingOnSource on the source is asked to stop and demote, then the target
// is promoted), or, still in Pending, it began rejoining a fenced-off target
// (TargetRejoined set: the target was stopped, and its diverged data may be
// being discarded).
func startedMoving(fr *srv1alpha1.FailoverRequest) bool {
	switch fr.Status.Phase {
	case "", srv1alpha1.FailoverPending:
		return meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionTargetRejoined) != nil
	}
	return !terminal(fr.Status.Phase)
}

// movingHolder returns the request named by a Lease holder identity when it
// still exists, has not ended and startedMoving; nil otherwise. It reads the
// API server rather than the cache: the decision hands a group to another
// request, and a cache just restarted may show the holder's older phase.
func (r *Reconciler) movingHolder(ctx context.Context, namespace, holder string) (*srv1alpha1.FailoverRequest, error) {
	parts := strings.Split(holder, "/")
	if len(parts) != 3 || parts[0] != "FailoverRequest" {
		return nil, nil
	}
	var reader client.Reader = r.Client
	if r.APIReader != nil {
		reader = r.APIReader
	}
	fr := &srv1alpha1.FailoverRequest{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: parts[1]}, fr); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading FailoverRequest %s, which holds the expired Lease: %w", parts[1], err)
	}
	if string(fr.UID) != parts[2] || !startedMoving(fr) {
		return nil, nil
	}
	return fr, nil
}

// lockHeldMessage says, on a request waiting for its group's Lease, who holds
// it and what the operator can do.
func lockHeldMessage(fr *srv1alpha1.FailoverRequest, group string, lock lockState) string {
	if k := lock.keeper; k != nil {
		return fmt.Sprintf("group %s is held by FailoverRequest %s, which already moved it (phase %s) and has not ended; its Lease expired at %s while quorum-manager was not running, and only %s may take it again: it resumes on its own, and this request starts once it ends. "+
			"Follow it with: kubectl siterecovery status %s -n %s; delete this request to withdraw it",
			group, k.Name, k.Status.Phase, lock.expiry.UTC().Format(time.RFC3339), k.Name, group, fr.Namespace)
	}
	return fmt.Sprintf("group %s is locked by %s until %s; this request starts once it ends or the Lease expires. Delete this request to withdraw it",
		group, lock.holder, lock.expiry.UTC().Format(time.RFC3339))
}
