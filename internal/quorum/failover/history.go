package failover

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// recordHistory puts a finished request's outcome at the head of its group's
// status.history, once: a retry after a crash finds the request's UID there.
// This controller is the only writer of history; the patch touches no other
// status field.
func (r *Reconciler) recordHistory(ctx context.Context, fr *srv1alpha1.FailoverRequest) error {
	// A record the cache already shows is on the server: records only go
	// when newer ones push them out. A finished request reconciles again on
	// its own status and finalizer writes, and each would read the group.
	key := client.ObjectKey{Namespace: fr.Namespace, Name: fr.Spec.ProtectionGroupRef.Name}
	cached := &srv1alpha1.ProtectionGroup{}
	if err := r.Client.Get(ctx, key, cached, readOnly); err == nil && hasRecord(cached, fr) {
		return nil
	}
	// Read through the API server: the write below is optimistically locked,
	// and a cache that lags (its watch resuming after the quorum API server
	// came back) would fail it with a conflict until it catches up.
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	group := &srv1alpha1.ProtectionGroup{}
	if err := reader.Get(ctx, key, group); err != nil {
		return client.IgnoreNotFound(err) // a request for a missing group has nothing to record on
	}
	if hasRecord(group, fr) {
		return nil
	}
	_, err := flow.PatchStatus(ctx, r.Client, nil, group, func(g *srv1alpha1.ProtectionGroup) {
		g.Status.History = append([]srv1alpha1.RequestRecord{recordOf(fr)}, g.Status.History...)
		if len(g.Status.History) > srv1alpha1.GroupHistoryLength {
			g.Status.History = g.Status.History[:srv1alpha1.GroupHistoryLength]
		}
	})
	return err
}

func hasRecord(g *srv1alpha1.ProtectionGroup, fr *srv1alpha1.FailoverRequest) bool {
	for _, h := range g.Status.History {
		if h.UID == string(fr.UID) {
			return true
		}
	}
	return false
}

// historyPhases bounds the phases a record keeps to the API's limit.
const historyPhases = 16

func recordOf(fr *srv1alpha1.FailoverRequest) srv1alpha1.RequestRecord {
	rec := srv1alpha1.RequestRecord{
		Kind:           "FailoverRequest",
		Name:           fr.Name,
		UID:            string(fr.UID),
		Type:           string(fr.Spec.FailoverType),
		SourceCluster:  fr.Status.SourceCluster,
		TargetCluster:  fr.Spec.TargetCluster,
		Outcome:        string(fr.Status.Phase),
		Message:        flow.Truncate(fr.Status.Message, 1024),
		StartTime:      fr.Status.StartTime,
		CompletionTime: fr.Status.CompletionTime,
	}
	if ready := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady); ready != nil {
		rec.Reason = ready.Reason
	}
	p := fr.Status.PhaseHistory
	if len(p) > historyPhases {
		p = p[len(p)-historyPhases:]
	}
	rec.Phases = append(rec.Phases, p...)
	return rec
}
